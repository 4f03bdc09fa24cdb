#!/usr/bin/python3
"""Checks the pictures of docs/pictures.md through the CLI: the SVG block maps
of `tessera graph --blocks` and `tessera prove --svg` (parsed with
xml.etree), and the trace-event JSON of `tessera run --timeline` (parsed with
json and checked against the Trace Event Format).

    check_pictures.py TESSERA ROOT CASE      (one meson test per CASE)
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
TESSERA, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])  # meson passes the exe relative to the build dir
TMP = tempfile.mkdtemp(prefix="tessera-pictures-")
atexit.register(shutil.rmtree, TMP, True)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def tessera(*args, status=0):
    r = subprocess.run([TESSERA, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    if status is not None and r.returncode != status:
        fail(f"tessera {' '.join(args)}: exit {r.returncode}, expected {status}\n{r.stdout}{r.stderr}")
    return r


def path(name):
    return os.path.join(TMP, name)


# ---- SVG ---------------------------------------------------------------------------------------

def classes(el):
    return el.get("class", "").split()


def block_map(*args):
    out = path("map.svg")
    tessera("graph", *args, "--blocks", "-o", out)
    return ET.parse(out).getroot()  # raises on malformed XML


def operand(root, subject):
    for g in root.iter(SVG + "g"):
        if "operand" in classes(g) and g.get("data-subject") == subject:
            return g
    fail(f"no panel for {subject}")


def blocks(panel):
    return [r for r in panel.iter(SVG + "rect") if "block" in classes(r)]


def swatches(root):
    """Grid point label -> its colour in the legend, in visiting order."""
    return {r.get("data-point"): r.get("fill") for r in root.iter(SVG + "rect") if "swatch" in classes(r)}


def stripe_colours(panel, block):
    """The fills of the stripes drawn under `block` (same y, inside its x range)."""
    x, y, w = float(block.get("x")), float(block.get("y")), float(block.get("width"))
    return [r.get("fill") for r in panel.iter(SVG + "rect")
            if "stripe" in classes(r) and float(r.get("y")) == y and x - 0.01 <= float(r.get("x")) < x + w - 0.01]


def texts(root):
    return [t.text or "" for t in root.iter(SVG + "text")]


def case_svg_add():
    root = block_map("examples/add.tsr")
    check(root.tag == SVG + "svg", "root is not <svg>")
    legend = swatches(root)
    check(list(legend)[:3] == ["(0,0)", "(0,1)", "(0,2)"] and len(legend) == 32, f"legend order: {list(legend)[:5]}")
    # 24 distinct fills (8 colours, solid, dotted, cross-hatched), then they come back.
    fills = list(legend.values())
    check(len(set(fills[:24])) == 24 and fills[24:] == fills[:8], f"grid point fills: {fills}")
    check(all(f.startswith("#") for f in fills[:8]) and all(f.startswith("url(#") for f in fills[8:24]),
          f"the first 8 points are solid colours, the next 16 patterns: {fills[:24]}")
    defined = {p.get("id") for p in root.iter(SVG + "pattern")}
    check({f[5:-1] for f in fills[8:24]} <= defined, f"patterns used but not defined: {fills[8:24]} vs {defined}")
    check(any("axis 1 varies fastest" in t for t in texts(root)), "no grid order in the legend")
    check(any("pallas_call add (kernel @add_kernel)" in t for t in texts(root)), "no kernel name")
    for subject in ["in[0]", "in[1]", "out[0]"]:
        panel = operand(root, subject)
        bs = blocks(panel)
        check(len(bs) == 32, f"{subject}: {len(bs)} blocks, expected 32")
        for b in bs:
            i, j = (int(v) for v in b.get("data-index").strip("()").split(","))
            point = f"({i},{j})"
            check(b.get("data-points") == point, f"{subject} block ({i}, {j}) touched by {b.get('data-points')}")
            check(stripe_colours(panel, b) == [legend[point]], f"{subject} block {point} is not coloured as {point}")
            check(not {"revisit", "partial", "oob"} & set(classes(b)), f"{subject} block {point}: {b.get('class')}")
        labels = [t.text for t in panel.iter(SVG + "text") if "label" in classes(t)]
        check("(7,3)" in labels, f"{subject}: no label (7,3)")
    check(not [r for r in root.iter(SVG + "rect") if "padding" in classes(r)], "add.tsr has no padding")


def case_svg_matmul():
    root = block_map("examples/matmul.tsr")
    legend = swatches(root)
    check(len(legend) == 24, "matmul has 24 grid points")
    x = operand(root, "in[0]")
    check(len(blocks(x)) == 8, "x: 8 blocks")
    b = [b for b in blocks(x) if b.get("data-index") == "(1, 0)"][0]
    check(b.get("data-points") == "(1,0,0) (1,1,0) (1,2,0)", f"x block (1, 0): {b.get('data-points')}")
    check(stripe_colours(x, b) == [legend["(1,0,0)"], legend["(1,1,0)"], legend["(1,2,0)"]], "x block (1, 0) colours")
    y = operand(root, "in[1]")
    check(len(blocks(y)) == 6 and all(len(b.get("data-points").split()) == 4 for b in blocks(y)), "y: 6 blocks of 4 points")
    out = operand(root, "out[0]")
    check(len(blocks(out)) == 12, "out: 12 blocks")
    # Consecutive grid points accumulate into an output block: not a revisit.
    check(all(len(b.get("data-points").split()) == 2 and "revisit" not in classes(b) for b in blocks(out)),
          "matmul's output blocks are accumulated, never revisited")
    check(not [t for t in texts(root) if t == "REVISITED"], "REVISITED on matmul")


def case_svg_revisit():
    root = block_map("tests/pictures/add_revisit.tsr")
    out = operand(root, "out[0]")
    bs = blocks(out)
    check(len(bs) == 4, f"the mutant writes 4 output blocks, drew {len(bs)}")
    for b in bs:
        check("revisit" in classes(b), f"output block {b.get('data-index')} not marked as a revisit")
        check(b.get("stroke") == "#c00000", "a revisit is outlined red")
        check(len(b.get("data-points").split()) == 8, "each block is written by 8 grid points")
    check("REVISITED" in texts(out), "no REVISITED label")
    # 28 of the 32 places stay blank.
    tiles = [r for r in out.iter(SVG + "rect") if "tile" in classes(r)]
    check(len(tiles) == 32, f"{len(tiles)} tiles, expected 32 (28 of them never touched)")
    # Inputs are read by one grid point per block: no revisits there.
    check(not [b for b in blocks(operand(root, "in[0]")) if "revisit" in classes(b)], "input marked as revisit")


def case_svg_padding():
    root = block_map("tests/pictures/partial.tsr")
    for subject in ["in[0]", "out[0]"]:
        panel = operand(root, subject)
        bs = blocks(panel)
        check(len(bs) == 6, f"{subject}: {len(bs)} blocks")
        partial = sorted(b.get("data-index") for b in bs if "partial" in classes(b))
        check(partial == ["(0, 1)", "(1, 1)", "(2, 0)", "(2, 1)"], f"{subject}: partial blocks {partial}")
        pads = [r for r in panel.iter(SVG + "rect") if "padding" in classes(r)]
        check(len(pads) == 2 and all(r.get("fill") == "url(#padding-hatch)" for r in pads), f"{subject}: padding {len(pads)}")
        check(any("padded to (384, 256)" in t for t in texts(panel)), f"{subject}: no padded shape")
    check(root.find(f".//{SVG}pattern[@id='padding-hatch']") is not None, "no hatch pattern")


def case_svg_narrow_oob():
    # A block too narrow for any label: its flag, abbreviated, goes above it.
    root = block_map("tests/pictures/narrow_oob.tsr")
    x = operand(root, "in[0]")
    oob = [b for b in blocks(x) if "oob" in classes(b)]
    check([b.get("data-index") for b in oob] == ["(64)"], f"out-of-bounds blocks {[b.get('data-index') for b in oob]}")
    flags = [t for t in x.iter(SVG + "text") if "flag" in classes(t)]
    check([t.text for t in flags] == ["OOB"], f"flags {[t.text for t in flags]}")
    check(float(flags[0].get("y")) < float(oob[0].get("y")), "the OOB flag is not above its block")


def case_svg_zoo():
    """Every zoo kernel draws a well-formed map; scalar prefetch needs --input."""
    for name in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        if not name.endswith(".tsr") or name == "gather_rows.tsr":
            continue
        block_map("examples/" + name)
    r = tessera("graph", "examples/gather_rows.tsr", "--blocks", status=1)
    check("read scalar prefetch %idx; give its values with --input idx=PATH.npy" in r.stderr, r.stderr)
    import numpy  # /usr/bin/python3 has it (tests/pictures/meson.build)
    idx = path("idx.npy")
    numpy.save(idx, numpy.array([3, 3, 1020] + list(range(13)), dtype=numpy.int32))
    root = block_map("examples/gather_rows.tsr", "--input", "idx=" + idx)
    rows = {b.get("data-index"): b.get("data-points") for b in blocks(operand(root, "in[0]"))}
    check(rows.get("(3, 0)") == "(0) (1) (6)" and rows.get("(1020, 0)") == "(2)", f"gather rows: {rows}")
    # Flash attention is rank 3: one slice per leading (squeezed) index.
    root = block_map("examples/flash_attention.tsr")
    titles = [t.text for t in operand(root, "in[0]").iter(SVG + "text") if "slice-title" in classes(t)]
    check(titles == ["q[0, :, :]", "q[1, :, :]", "q[2, :, :]", "q[3, :, :]"], f"slices {titles}")


def case_svg_errors():
    r = tessera("graph", "examples/add.tsr", "--blocks", "--call", "1", status=1)
    check("@main has 1 pallas_call(s); --call 1 names none" in r.stderr, r.stderr)
    r = tessera("graph", "examples/add.tsr", "--blocks", "--call", "x", status=1)
    check("--call needs a non-negative integer" in r.stderr, r.stderr)
    r = tessera("graph", "examples/add.tsr", "-o", path("x.svg"), status=1)
    check("-o goes with --blocks" in r.stderr, r.stderr)
    big = path("big.tsr")
    with open(os.path.join(ROOT, "examples/add.tsr")) as f:
        text = f.read().replace("f32[1024,512]", "f32[8192,1024]").replace("grid=(8, 4)", "grid=(64, 8)")
    with open(big, "w") as f:
        f.write(text)
    tessera("graph", big, "--blocks", "-o", path("big.svg"))  # 512 points: drawn
    with open(big, "w") as f:
        f.write(text.replace("f32[8192,1024]", "f32[8320,8192]").replace("grid=(64, 8)", "grid=(65, 64)"))
    r = tessera("graph", big, "--blocks", status=1)
    check("has more than 4096 points, too many to draw" in r.stderr, r.stderr)
    # Without --blocks, graph is the def-use graph as before.
    r = tessera("graph", "examples/add.tsr")
    check(r.stdout.startswith("digraph"), r.stdout[:80])


def case_prove_svg():
    out = path("broken")
    r = tessera("prove", "tests/pictures/add_revisit.tsr", "--svg", out, status=1)
    written = [l.split(" ", 1)[1] for l in r.stdout.splitlines() if l.startswith("wrote ")]
    check(sorted(os.path.basename(p) for p in written) == ["add-out0-non-revisiting.svg", "add-out0-parallel-safety.svg"],
          f"written: {written}")
    check(sorted(os.listdir(out)) == ["add-out0-non-revisiting.svg", "add-out0-parallel-safety.svg"], str(os.listdir(out)))
    root = ET.parse(os.path.join(out, "add-out0-parallel-safety.svg")).getroot()
    captions = " ".join(t.text for t in root.iter(SVG + "text") if "caption" in classes(t))
    check("add out[0] parallel safety: FAILED at grid points (0, 0) and (1, 0)" in captions, captions)
    hl = [r for r in operand(root, "out[0]").iter(SVG + "rect") if "highlight" in classes(r)]
    check(len(hl) == 1 and hl[0].get("data-index") == "(0, 0)", f"highlight {[(h.get('data-index'), h.get('class')) for h in hl]}")
    marked = [r.get("data-point") for r in root.iter(SVG + "rect") if "swatch" in classes(r) and "highlight" in classes(r)]
    check(marked == ["(0,0)", "(1,0)"], f"legend marks {marked}")
    # Out of bounds: the block at the counterexample lies outside the array.
    out = path("bounds")
    r = tessera("prove", "tests/pictures/matmul_bounds.tsr", "--svg", out, status=1)
    check(r.stdout.splitlines()[-1] == "wrote " + os.path.join(out, "matmul-in1-bounds.svg"), r.stdout)
    root = ET.parse(os.path.join(out, "matmul-in1-bounds.svg")).getroot()
    y = operand(root, "in[1]")
    oob = [b.get("data-index") for b in blocks(y) if "oob" in classes(b)]
    check(oob == ["(2, 0)", "(2, 1)"], f"out-of-bounds blocks {oob}")
    # Each is labelled, though the whole flag is wider than the block.
    flags = [t.text for t in y.iter(SVG + "text") if "flag" in classes(t)]
    check(flags == ["OUT OF", "BOUNDS"] * 2, f"out-of-bounds labels {flags}")
    hl = [r.get("data-index") for r in y.iter(SVG + "rect") if "highlight" in classes(r)]
    check(hl == ["(2, 0)"], f"highlight {hl}")
    # A proved kernel draws nothing.
    out = path("proved")
    r = tessera("prove", "examples/matmul.tsr", "--svg", out)
    check("wrote" not in r.stdout and not os.path.exists(out), r.stdout)


# ---- timeline ----------------------------------------------------------------------------------

REQUIRED = {"X": {"name", "ph", "ts", "dur", "pid", "tid"}, "b": {"name", "cat", "ph", "ts", "id", "pid", "tid"},
            "e": {"name", "cat", "ph", "ts", "id", "pid", "tid"}, "i": {"name", "ph", "ts", "s", "pid", "tid"},
            "M": {"name", "ph", "pid", "tid", "args"}}


def timeline(*args, status=0):
    out = path("run.json")
    if os.path.exists(out):
        os.remove(out)
    tessera("run", *args, "--timeline", out, status=status)
    with open(out) as f:
        data = json.load(f)
    events = data["traceEvents"]
    for e in events:
        check(e["ph"] in REQUIRED, f"unknown phase {e}")
        missing = REQUIRED[e["ph"]] - set(e)
        check(not missing, f"event {e} lacks {missing}")
        check(all(isinstance(e[k], int) for k in ("ts", "dur", "pid", "tid", "id") if k in e), f"non-integer field in {e}")
    # Every async begin has its end (same name, category and id), after it.
    opened = {}
    for e in events:
        key = (e.get("cat"), e.get("id"))
        if e["ph"] == "b":
            check(key not in opened, f"id reused while open: {e}")
            opened[key] = e
        elif e["ph"] == "e":
            check(key in opened and opened[key]["name"] == e["name"] and opened[key]["ts"] <= e["ts"], f"unmatched end {e}")
            del opened[key]
    check(not opened, f"async events never ended: {list(opened.values())[:2]}")
    # Every thread that has events is named, and so is its process.
    named = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    procs = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    for e in events:
        if e["ph"] != "M" and e.get("s") != "g":
            check((e["pid"], e["tid"]) in named and e["pid"] in procs, f"no thread/process name for {e}")
    return events


def of(events, ph, cat=None, name=None):
    return [e for e in events if e["ph"] == ph and (cat is None or e.get("cat") == cat) and (name is None or e["name"] == name)]


def case_timeline_add():
    events = timeline("examples/add.tsr", "--random-inputs", "1")
    steps = of(events, "X", "grid")
    check(len(steps) == 32, f"{len(steps)} grid steps, expected 32")
    check([s["args"]["point"] for s in steps[:3]] == [[0, 0], [0, 1], [0, 2]], "grid points in order")
    check(steps[5]["name"] == "step (1, 1)" and steps[5]["args"]["kernel"] == "@add_kernel", str(steps[5]))
    copies = of(events, "X", "copy")
    check(len(copies) == 96, f"{len(copies)} block copies (32 steps x 2 in + 1 out)")
    check(copies[0]["name"] == 'copy in "x"' and copies[0]["args"]["bytes"] == 128 * 128 * 4, str(copies[0]))
    # Complete events nest: each copy lies inside its step.
    for c in copies:
        check(any(s["ts"] <= c["ts"] and c["ts"] + c["dur"] <= s["ts"] + s["dur"] for s in steps), f"copy outside a step: {c}")
    check({(e["name"], e["args"]["name"]) for e in of(events, "M")} == {("process_name", "device 0"), ("thread_name", "core 0")},
          "metadata")
    # Two cores: two threads, the grid split between them.
    events = timeline("examples/add.tsr", "--random-inputs", "1", "--cores", "2")
    steps = of(events, "X", "grid")
    check(len(steps) == 32 and {s["tid"] for s in steps} == {0, 1}, "two cores share 32 steps")
    check(len([e for e in of(events, "M") if e["name"] == "thread_name"]) == 2, "two thread names")


def case_timeline_deterministic():
    for args in [("examples/matmul.tsr",), ("examples/dma_pipeline.tsr", "--cores", "2"), ("examples/add.tsr", "--cores", "2")]:
        files = []
        for k in range(2):
            out = path(f"det{k}.json")
            tessera("run", *args, "--random-inputs", "3", "--timeline", out)
            with open(out, "rb") as f:
                files.append(f.read())
        check(files[0] == files[1], f"two runs of {args} gave different timelines")


def case_timeline_dma():
    events = timeline("examples/dma_pipeline.tsr", "--random-inputs", "1")
    begins, ends = of(events, "b", "dma"), of(events, "e", "dma")
    check(len(begins) == 32 and len(ends) == 32, f"{len(begins)} DMA begins, {len(ends)} ends; expected 32 each")
    first = begins[0]
    check(first["name"] == "DMA any->vmem" and first["args"]["src"] == "any" and first["args"]["dst"] == "vmem", str(first))
    check(first["args"]["bytes"] == 128 * 128 * 4 and 'in_sem"[0]' in first["args"]["semaphore"], str(first))
    check(len(of(events, "b", "dma", "DMA vmem->any")) == 16, "16 write-backs")
    waits = of(events, "X", "wait", "dma_wait")
    check(len(waits) == 32, f"{len(waits)} dma_waits")
    # A DMA ends at the wait that consumes it: inside that wait's span.
    for e in ends:
        check(any(w["ts"] <= e["ts"] <= w["ts"] + w["dur"] for w in waits), f"DMA end outside any wait: {e}")
    # Eager DMAs too.
    events = timeline("examples/dma_pipeline.tsr", "--random-inputs", "1", "--dma", "eager")
    check(len(of(events, "b", "dma")) == 32 and len(of(events, "e", "dma")) == 32, "eager DMAs")


def case_timeline_errors():
    events = timeline("tests/pictures/dma_race.tsr", "--random-inputs", "1", "--detect-races", status=1)
    races = of(events, "i", "race", "race")
    check(len(races) == 1 and races[0]["s"] == "t" and "RACE DETECTED" in races[0]["args"]["message"], str(races))
    failed = of(events, "i", "error")
    check(len(failed) == 1 and failed[0]["name"] == "race" and failed[0]["s"] == "g", str(failed))
    # The run stopped inside its step: the step is recorded as unfinished, the DMA closed.
    check(of(events, "X", "grid")[0]["args"].get("unfinished") is True, "step not marked unfinished")
    check(of(events, "e", "dma")[0]["args"].get("unfinished") is True, "open DMA not closed as unfinished")
    # Without race detection the same kernel runs.
    timeline("tests/pictures/dma_race.tsr", "--random-inputs", "1")
    events = timeline("tests/pictures/deadlock.tsr", status=1)
    dead = of(events, "i", "error", "deadlock")
    check(len(dead) == 1 and "every core is waiting" in dead[0]["args"]["message"], str(dead))
    check(of(events, "X", "wait", "semaphore_wait")[0]["args"].get("unfinished") is True, "the deadlocked wait")
    events = timeline("tests/pictures/add_revisit.tsr", "--random-inputs", "1", status=1)
    check([e["name"] for e in of(events, "i", "error")] == ["revisit"], "revisit error event")
    check(len(of(events, "X", "grid")) == 5, "steps up to the revisit at (1, 0)")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in CASES:
        print(__doc__ + "cases: " + " ".join(CASES))
        sys.exit(2)
    CASES[sys.argv[3]]()
    print("ok: " + sys.argv[3])
