"""Generate a realistic autoresearch wiki for benchmarks and lint tests (deterministic).

    python benchmarks/gen_wiki.py OUT N [--seed S] [--broken-fraction F]
    python benchmarks/gen_wiki.py OUT --real-shape [--seed S]

writes ``OUT/wiki/`` with N experiment pages of 3-6 KB spread over 4 models x 5 lanes:

- ``wiki/experiments/<model>_autoresearch_optimization/<lane>/experiments/YYYY-MM-DD-vNNN-slug.md``,
  each with 14-17 frontmatter keys (unquoted dates, a tags list, a metrics dict, a bool, a
  headline ``mfu`` in percent on verdict pages, an optional quoted short sha, an optional
  folded string) and the seed's sections: Hypothesis under test (with **Hypothesis**,
  **Mechanism**, **Predicted signal**, **Falsification criterion**), Setup (fenced block),
  Results (pipe table), Profile, HLO Dump (fenced block), Analysis, Verdict, Links. About 97%
  carry a verdict as their status (filled Profile, HLO Dump and Verdict); the rest are
  ``in_progress`` stubs whose Results, Profile, HLO Dump and Verdict are still empty;
- a ``program.md`` at the root, model and lane levels (the lane's ``## Config`` passes
  ``schema/program-config.schema.json``);
- each lane's ``log.md`` (a ``start`` marker, then one entry per experiment) and
  ``wiki/log.md`` (cross-cutting entries), newest first, as ``## [YYYY-MM-DD] op | text``;
- the model pages ``wiki/models/<model>-<lane>.md``, whose Current best names the best
  ``supported`` experiment of each variant.

With the default ``--broken-fraction 0`` the wiki is lint-clean. ``--broken-fraction F``
breaks that fraction of the experiment pages on purpose, each in one of the ways listed in
``DEFECTS`` (a broken page is never ``supported``, so model pages stay right);
``OUT/broken.tsv`` lists ``path<TAB>defect``, so a lint test can check that every one is
found and nothing else. The same arguments always give the same bytes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import re
import sys
from pathlib import Path

MODELS = ("gemma4", "llama3_8B", "qwen3_30B", "mixtral_8x7B")
LANES = ("tpu", "jax", "torchax", "maxtext", "vllm")
VARIANTS = ("base", "long-ctx", "moe-lite", "ref")
VERDICTS = ("supported", "refuted", "inconclusive", "invalid")
VERDICT_WEIGHTS = (3, 5, 3, 1)
IN_PROGRESS_FRACTION = 0.03
START_DATE = dt.date(2025, 9, 1)
USER_PREFIX = "demo"
DEFECTS = (
    "missing-section",  # the HLO Dump section is gone
    "missing-key",  # a required frontmatter key is gone
    "bad-status",  # status is not one of the allowed values
    "empty-profile",  # a verdict page whose Profile section is empty
    "bad-date",  # created is not a date
    "duplicate-section",  # the same H2 title twice
)

TOPICS = (
    ("splash-attention", "splash attention block sizes", "attention", "custom_call(target=splash_mha_fwd)"),
    ("remat-policy", "selective rematerialisation of the MLP", "rematerialization", "fusion count in backward"),
    ("fsdp-axis", "a wider fsdp mesh axis", "all-gather", "all-gather share of step time"),
    ("async-collective", "async collective fusion", "collective-permute", "overlap of all-reduce with matmul"),
    ("megablox-gmm", "megablox grouped matmul for experts", "expert matmul", "custom_call(target=gmm)"),
    ("host-offload", "host offload of optimizer state", "host-device copy", "copy-start/copy-done pairs"),
    ("int8-matmul", "int8 weight matmuls in the MLP", "convolution", "s8 dot operands"),
    ("seq-packing", "sequence packing of short documents", "padding waste", "tokens per step at equal step time"),
    ("scan-layers", "scanned decoder layers", "compile time", "while loop body count"),
    ("bf16-grads", "bf16 gradient all-reduce", "all-reduce bytes", "all-reduce operand dtype"),
)
WORDS = (
    "the step time falls when the fusion keeps the activation in VMEM and the scheduler overlaps the "
    "collective with the next matmul while the host stays idle so the profile shows a smaller idle "
    "bucket and a longer compute bucket with the same loss curve as the baseline within noise"
).split()


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _paragraph(rng: random.Random, sentences: int) -> str:
    text = " ".join(_sentence(rng, rng.randint(8, 16)) for _ in range(sentences))
    lines, line = [], ""
    for word in text.split():
        if len(line) + len(word) + 1 > 88:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "\n".join(lines)


def _workload(model: str, lane: str, vid: int, slug: str) -> str:
    from wikiengine.core.identity import model_name, workload_name

    return workload_name(USER_PREFIX, model_name(model), lane, vid, slug)


def experiment_page(
    rng: random.Random, model: str, lane: str, vid: int, day: dt.date, in_progress: bool, supported_ok: bool = True
) -> tuple[str, str, dict]:
    """One experiment page: (file name, text, {"status", "variant", "mfu"}).

    ``supported_ok=False`` gives a page that is not ``supported`` (a page about to be broken
    must not be a lane's best, or the model page would be wrong too).
    """
    slug_base, topic, bucket, signal = rng.choice(TOPICS)
    slug = f"{slug_base}-{rng.choice(('a', 'b', 'c', 'sweep', 'retry', 'wide', 'narrow'))}"
    variant = rng.choice(VARIANTS)
    mfu_base = round(rng.uniform(0.28, 0.52), 4)
    status = "in_progress" if in_progress else rng.choices(VERDICTS, VERDICT_WEIGHTS)[0]
    if status == "supported" and not supported_ok:
        status = "refuted"
    low, high = {"supported": (1.02, 1.12), "refuted": (0.9, 1.0), "inconclusive": (0.99, 1.01)}.get(status, (0.8, 1.1))
    mfu = round(mfu_base * rng.uniform(low, high), 4)
    short_sha = "".join(rng.choice("0123456789abcdef") for _ in range(7))
    updated = day + dt.timedelta(days=rng.randint(0, 3))
    fm = [
        f"title: v{vid:03d} {topic} on {variant}",
        "type: experiment",
        f"model: {model}",
        f"lane: {lane}",
        f"vid: {vid}",
        f"variant: {variant}",
        f'hypothesis: "{topic} raises MFU on {variant} without moving the loss curve"',
        f"status: {status}",
        *([f"mfu: {round(mfu * 100, 1)}"] if not in_progress else []),
        f"created: {day.isoformat()}",
        f"updated: {updated.isoformat()}",
        f"tags: [{lane}, {slug_base}, {variant}]",
        "metrics:",
        f"  baseline_mfu: {round(mfu_base * 100, 1)}",
        f"  step_time_ms: {round(rng.uniform(180, 900), 1) if not in_progress else 'null'}",
        f"  loss_at_500: {round(rng.uniform(2.1, 3.4), 4)}",
        "backfilled: false",
        f"workload_name: {_workload(model, lane, vid, slug)}",
    ]
    if rng.random() < 0.7:
        fm.append(f"commit: '{short_sha}'")
    if not in_progress and rng.random() < 0.8:
        fm.append("summary: >-")
        fm.append(f"  {_sentence(rng, 10)}")
        fm.append(f"  {_sentence(rng, 8)}")

    gcs = f"gs://example-bucket/autoresearch/{model.lower().replace('_', '-')}-{lane}-v{vid:03d}-{slug}"
    parts = [
        f"# v{vid:03d}: {topic} on {variant}\n",
        "## Hypothesis under test\n",
        f"**Hypothesis**: {topic} raises MFU on {variant} by at least 2% without moving the loss curve.\n",
        f"**Mechanism**: {_paragraph(rng, 2)}\n",
        f"**Predicted signal**: expect {bucket} to drop from {rng.randint(12, 30)}% to "
        f"{rng.randint(4, 11)}% of step time; expect {signal} in the train_step module.\n",
        f"**Falsification criterion**: MFU below {mfu_base} + 0.005 over steps 200-500, or no {signal}.\n",
        "## Setup\n",
        "```bash\n"
        f"python -m {model.lower()}.train --variant {variant} --steps 500 \\\n"
        f"  --profile-dir {gcs}/xprof \\\n"
        f"  --dump-hlo {gcs}/hlo \\\n"
        f"  --flag {slug_base}=on\n"
        "```\n",
        f"Image `registry.example/{model.lower()}-container:{slug}`; workload "
        f"`{_workload(model, lane, vid, slug)}`.\n",
    ]
    if in_progress:
        parts += ["## Results\n", "## Profile\n", "## HLO Dump\n", "## Verdict\n"]
    else:
        measured = [("MFU (%)", round(mfu_base * 100, 1), round(mfu * 100, 1))] + [
            (name, round(value, 3), round(value * rng.uniform(0.9, 1.1), 3))
            for name, value in (("step time (s)", rng.uniform(0.2, 0.9)), ("HBM peak (GiB)", rng.uniform(40, 90)))
        ]
        rows = "\n".join(f"| {name} | {old} | {new} | {(new - old) / old:+.2%} |" for name, old, new in measured)
        parts += [
            "## Results\n",
            f"| metric | baseline | this run | delta |\n|---|---:|---:|---:|\n{rows}\n",
            "## Profile\n",
            f"{_paragraph(rng, 3)}\n",
            f"- {bucket}: {rng.randint(3, 30)}% of step time\n- idle: {rng.randint(1, 9)}%\n"
            f"- matmul: {rng.randint(40, 70)}%\n",
            "## HLO Dump\n",
            f"Hypothesis-firing audit: CONFIRMED — the {topic} change is in the compiled step.\n\n"
            "```text\n"
            + "".join(
                f"%fusion.{rng.randint(1, 999)} = bf16[{rng.choice((1024, 2048, 4096))},"
                f"{rng.choice((128, 256, 512))}] fusion(%p{i}), kind=kLoop\n"
                for i in range(rng.randint(3, 7))
            )
            + "```\n",
            "## Analysis\n",
        ]
    links = (
        "## Links\n\n"
        f"- Model page: [[{model}-{lane}]]\n"
        f"- Previous: [[{(day - dt.timedelta(days=1)).isoformat()}-v{max(vid - 1, 1):03d}]]\n"
    )
    text = "---\n" + "\n".join(fm) + "\n---\n" + "\n".join(parts)
    if in_progress:
        while len(text) < 3100:  # a stub is short: its planned setup gets the room
            text = text.replace("## Results\n", f"{_paragraph(rng, 2)}\n\n## Results\n", 1)
    else:
        verdict = f"\n## Verdict\n\n**{status}**. {_paragraph(rng, 2)}\n"
        target = rng.randint(3200, 5900)
        while len(text) + len(verdict) + len(links) + 200 < target:
            text += "\n" + _paragraph(rng, rng.randint(2, 3)) + "\n"
        text += verdict
    info = {"status": status, "variant": variant, "mfu": None if in_progress else round(mfu * 100, 1),
            "updated": updated}
    return f"{day.isoformat()}-v{vid:03d}-{slug}.md", text + "\n" + links, info



def break_page(rng: random.Random, text: str, defect: str) -> str:
    """Break one page in the way ``defect`` names."""
    if defect == "missing-section":
        return re.sub(r"^## HLO Dump\n.*?(?=^## )", "", text, count=1, flags=re.M | re.S)
    if defect == "missing-key":
        return "\n".join(line for line in text.split("\n") if not line.startswith("status: "))
    if defect == "bad-status":
        return text.replace("status: ", "status: done-ish # ", 1)
    if defect == "empty-profile":
        head, _, rest = text.partition("## Profile\n")
        _, _, after = rest.partition("## HLO Dump\n")
        return head + "## Profile\n\n## HLO Dump\n" + after
    if defect == "bad-date":
        return text.replace("created: ", "created: someday ", 1)
    if defect == "duplicate-section":
        return text + "\n## Verdict\n\nA second verdict.\n"
    raise ValueError(defect)


def program_texts(model: str, lane: str) -> dict[str, str]:
    return {
        "model": (
            f"# {model} program (model level)\n\nUSER_PREFIX = {USER_PREFIX}\n\n## The goal\n\n"
            f"Raise {model} training MFU without moving the loss curve.\n\n"
            f"## {model.split('_')[0].capitalize()}-specific CAN additions\n\n- CAN change remat policy.\n"
        ),
        "lane": (
            f"## Setup\n\n{lane} lane of {model}: v5p 2x2x2, xpk type `v5p-16`.\n\n"
            "## Config\n\n```yaml\nparallelism: 2\ntpu_type: v5p-16\ntopology: 2x2x2\n"
            "wake_interval_s: 600\nstorage_root: gs://example-bucket/autoresearch\n```\n"
        ),
    }


ROOT_PROGRAM = """# Autoresearch program (root)

## Inheritance model

Later levels replace whole H2 sections by title; `<Model>-specific CAN additions` concatenate.

## Setup

Use the lane's container image and launch command.

## Workload naming

`<USER_PREFIX>-<MODEL_NAME>-<LANE>-v<NNN>-<slug>[-<retry>]`, under 40 characters.

## The experiment loop

1. Re-ground. 2. File the stub. 3. Dispatch. 4. Verdict. 5. Log in the lane's log.md.

## Config

```yaml
parallelism: 1
wake_interval_s: 600
storage_root: gs://example-bucket/autoresearch
```
"""


def model_page(model: str, lane: str, best: dict[str, tuple[str, float]], open_count: int, day: dt.date) -> str:
    """The model page: a variant matrix, and Current best naming the best supported experiment of each variant."""
    folder = f"../experiments/{model}_autoresearch_optimization/{lane}/experiments"
    rows = "".join(
        f"| `{v}` | {best[v][1] if v in best else '—'} | {best[v][0].split('-', 3)[3] if v in best else '—'} |\n"
        for v in VARIANTS
    )
    current = "".join(
        f"[{best[v][0][11:]}]({folder}/{best[v][0]}.md) on {v}: {best[v][1]}% MFU\n" for v in VARIANTS if v in best
    )
    frontier = max(best.values(), key=lambda item: item[1])[0][11:] if best else "none yet"
    return (
        f"---\nmodel: {model}\nlane: {lane}\ncreated: {START_DATE.isoformat()}\n"
        f"updated: {day.isoformat()}\n---\n# {model} on {lane}\n\n"
        f"## Variant matrix\n\n| variant | best MFU | best exp |\n|---|---|---|\n{rows}\n"
        f"## Current best\n\n{current or 'none yet'}\n"
        f"## Open hyps\n\n{open_count} experiments in progress.\n\n"
        f"## Frontier exp\n\n{frontier}\n\n"
        + "".join(f"## {title}\n\n{body}\n\n" for title, body in MODEL_SECTIONS.items())
    )


MODEL_SECTIONS = {  # the sections MOD003 requires of a model page beside the matrix
    "Target metrics": "MFU at equal loss.",
    "How to run": "`python -m train --variant <size>`.",
    "Cross-variant open hypotheses": "- Overlap the gradient all-reduce with the backward pass.",
    "Variant-specific open hypotheses": "- The largest variant may want a wider FSDP axis.",
    "Retired hypotheses": "- Full rematerialisation: costs more compute than it saves memory.",
    "Knobs translation matrix": "| knob | jax | torchax |\n|---|---|---|\n| remat | policy | checkpoint |",
    "Iteration ladder": "1. baseline 2. kernels 3. sharding",
}


def generate(out: Path, count: int, *, seed: int = 0, broken_fraction: float = 0.0) -> list[tuple[Path, str]]:
    """Write the wiki under ``out/wiki``; return the (path, defect) of every broken page."""
    rng = random.Random(seed)
    wiki = Path(out) / "wiki"
    area = wiki / "experiments"
    area.mkdir(parents=True, exist_ok=True)
    (area / "program.md").write_text(ROOT_PROGRAM, encoding="utf-8")
    lanes = [(m, ln) for m in MODELS for ln in LANES]
    per_lane = {key: [] for key in lanes}
    for index in range(count):
        per_lane[lanes[index % len(lanes)]].append(index)
    n_broken = round(count * broken_fraction)
    broken_ids = set(rng.sample(range(count), n_broken)) if n_broken else set()
    broken: list[tuple[Path, str]] = []
    global_log: list[str] = []
    for model, lane in lanes:
        model_dir = area / f"{model}_autoresearch_optimization"
        lane_dir = model_dir / lane
        (lane_dir / "experiments").mkdir(parents=True, exist_ok=True)
        programs = program_texts(model, lane)
        (model_dir / "program.md").write_text(programs["model"], encoding="utf-8")
        (lane_dir / "program.md").write_text(programs["lane"], encoding="utf-8")
        log_entries: list[str] = [
            f"## [{START_DATE.isoformat()}] start | /start-experiment session begin\n\n**Op**: start\n"
            f"**Cluster pool**: {USER_PREFIX}-v5p-16\n**Parallelism**: 1\n"
        ]
        best: dict[str, tuple[str, float]] = {}  # variant -> (stem, mfu) of the best supported experiment
        open_count = 0
        day = last_filed = START_DATE
        global_log.append(f"## [{day.isoformat()}] lane-scaffold | {model} / {lane} lane created\n")
        for vid, index in enumerate(per_lane[(model, lane)], start=1):
            day = START_DATE + dt.timedelta(days=vid // 3)
            in_progress = rng.random() < IN_PROGRESS_FRACTION
            name, text, info = experiment_page(rng, model, lane, vid, day, in_progress, index not in broken_ids)
            path = lane_dir / "experiments" / name
            if index in broken_ids:
                defect = rng.choice(DEFECTS)
                if defect == "empty-profile" and in_progress:
                    defect = "missing-section"
                if defect in ("empty-profile", "missing-section") and info["status"] == "invalid":
                    defect = "bad-date"  # a run that never executed owes no Profile or HLO Dump (EXP002, EXP004)
                text = break_page(rng, text, defect)
                broken.append((path, defect))
            path.write_text(text, encoding="utf-8")
            stem = name[:-3]
            if in_progress:
                open_count += 1
                log_entries.append(f"## [{day.isoformat()}] run-experiment | {stem[11:]} dispatched\n")
                continue
            variant, mfu = info["variant"], info["mfu"]
            last_filed = max(last_filed, info["updated"])
            if info["status"] == "supported" and (variant not in best or mfu > best[variant][1]):
                best[variant] = (stem, mfu)
            log_entries.append(
                f"## [{day.isoformat()}] loop-iteration | {stem[11:]} on {variant}: {info['status']} (MFU {mfu}%)\n"
            )
            if vid % 50 == 0:
                global_log.append(f"## [{day.isoformat()}] ingest | {model} / {lane}: profiles up to v{vid:03d} indexed\n")
        (lane_dir / "log.md").write_text("\n".join(reversed(log_entries)), encoding="utf-8")
        models_dir = wiki / "models"
        models_dir.mkdir(exist_ok=True)
        (models_dir / f"{model}-{lane}.md").write_text(model_page(model, lane, best, open_count, max(day, last_filed)),
                                                         encoding="utf-8")
    global_log.sort(key=lambda entry: entry[4:14])
    (wiki / "log.md").write_text("\n".join(reversed(global_log)), encoding="utf-8")
    manifest = "".join(f"{p.relative_to(out).as_posix()}\t{d}\n" for p, d in broken)
    (Path(out) / "broken.tsv").write_text(manifest, encoding="utf-8")
    return broken



# --- the real shape ------------------------------------------------------------------
#
# ``generate_real`` writes a wiki shaped like a real public autoresearch wiki
# (``/work/shared/reference/conventions.md``): half of it generated codebase silo pages
# that link into git submodules which are recorded as gitlinks but not checked out, a
# gitignored profile folder that experiment pages link, an older-format lane with its own
# model-level program, log entries from before the log split, non-experiment files in
# lanes, prefixed ids, retry letters, suffixed headings, placeholders, older frontmatter
# forms, an index with counted sections, hypotheses and contradiction blocks; and a known
# number of planted true violations, listed in ``OUT/manifest.json``.

REAL_START = dt.date(2026, 4, 1)
SPLIT_DATE = dt.date(2026, 5, 1)  # the day the wiki split its global log into lane logs
REAL_COMMIT_DATE = "2026-07-15T12:00:00+00:00"
REAL_PREFIX = "ar"
REPOS = (
    "maxtext", "jax", "flax", "optax", "orbax", "pallas-kernels", "torchax", "vllm-tpu",
    "tokamax", "grain", "xprof", "paxml",
)
CHECKED_OUT_REPO = "maxtext"  # one submodule is checked out: links into it can be verified
SILO_DIRS = (("overview", 8), ("concepts", 40), ("catalog", 122), ("doc-concepts", 18))
CODE_WORDS = (
    "layers", "attention", "decoder", "embed", "moe", "mesh", "sharding", "optim", "train", "checkpoint",
    "input", "pipeline", "quant", "kernels", "ops", "utils", "config", "profiler", "metrics", "rope",
)
CONCEPT_WORDS = (
    "remat", "fsdp", "tensor-parallel", "splash", "megablox", "host-offload", "int8", "packing",
    "collective-matmul", "async-copy", "vmem", "hbm", "scan", "donation", "prefetch", "pipelining",
)
REAL_LANES = (
    # model folder, MODEL_NAME, lane, pages, pages under experiments/, sizes, hardwares
    ("qwen3", "jax", 260, True, ("8B", "32B"), ("v6e-8", "v5p-16")),
    ("llama3", "tpu", 260, False, ("8B", "70B"), ("v5p-16", "v6e-16")),
    ("llama3", "torchax", 160, True, ("8B",), ("v6e-8", "v5p-8")),
    ("gemma3", "maxtext", 120, False, ("4B", "27B"), ("v5p-8",)),  # the older-format lane
    ("qwen3", "vllm", 40, True, ("8B",), ("v6e-8",)),  # no program.md and no log.md
)
OLDER_LANE = ("gemma3", "maxtext")
# Shapes of a wiki that grew by hand (conventions.md): none of them is a violation.
NO_PROGRAM_LANES = (("qwen3", "vllm"), ("llama3", "torchax"))  # the lane inherits the model-level program
NO_LOG_LANE = ("qwen3", "vllm")  # pages, but no log.md
UNIT_LANE = ("llama3", "torchax")  # matrix headers with units, multi-figure cells
RERUN_LANE = ("llama3", "tpu")  # one id rerun many times with a hyphen: v057-b, v057-c, ...
HYPHEN_RERUNS = "bcdefghijklm"
LOCAL_REPO = "scratch-kernels"  # raw/code/<repo>/ as an untracked local checkout (gitignored, no gitlink)
OPEN_HYPS = 10  # the last hypotheses stay open for weeks with nothing testing them
RULE_ADOPTED = dt.date(2026, 7, 21)
LATE_STOP = dt.date(2026, 7, 3)  # a stop the heavy lane's last iterations follow with no new start  # SCHEMA.md: the stop-marker check holds for markers written after it
FIRING_FORMS = ("FIRING CONFIRMED: `{signal}` in jit_train_step.", "SILENT NO-OP: no `{signal}` in the dump.",
                "PARTIAL: `{signal}` in the forward pass only.", "Hypothesis-firing audit: CONFIRMED — `{signal}` present.",
                "Firing audit: confirmed — `{signal}` in train_step.")
FIRING_RULE_DATE = dt.date(2026, 4, 15)  # pages older than the firing-audit rule lack the line
SHELL_PROSE = ("Swept with `for W in $(cat sweep.txt); do xpk workload delete --workload '$W'; done` "
               "(auto-generated by the sweep script).")
KERNEL_FAMILIES = (("flash_attention", 60), ("rms_norm", 40))
GLOBAL_OPS = ("ingest-source", "ingest-codebase", "formulate", "analyze", "record-observation", "lint", "manual", "loop-pool")


def _sha(rng: random.Random, n: int = 40) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _rel(target: str, source: str) -> str:
    """The relative link from the page ``source`` to ``target`` (both root-relative posix)."""
    import posixpath

    return posixpath.relpath(target, posixpath.dirname(source))


class _Real:
    """The files of the real-shape corpus, built in memory, and the planted violations."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.files: dict[str, str] = {}
        self.manifest: list[dict] = []
        self.index: dict[str, list[tuple[str, str]]] = {}  # section -> [(title, rel)]
        self.type_count: dict[str, int] = {}
        self.global_log: list[tuple[dt.date, str]] = []
        self.pins: dict[str, str] = {}  # repo -> pinned commit
        self.modules: dict[str, list[str]] = {}  # repo -> module paths
        self.profiles: list[str] = []  # profile folders linked from experiment pages
        self.concepts: list[str] = []  # concept pages that others may link
        self.hyp_slugs: list[str] = []
        self.hyp_named: dict[str, tuple[dt.date, bool]] = {}  # slug -> (newest day a page names it, one is open)
        self.hyp_open: dict[str, str] = {}  # an open hypothesis page's slug -> its path
        self.lane_ids: dict[tuple[str, str], set[str]] = {}
        self.rows: dict[str, list[str]] = {}  # model page slug -> variant row keys

    def plant(self, code: str, rel: str, what: str) -> None:
        self.manifest.append({"code": code, "path": rel, "what": what})

    def add(self, rel: str, text: str, section: str | None = None, title: str | None = None, kind: str | None = None) -> None:
        self.files[rel] = text
        if kind:
            self.type_count[kind] = self.type_count.get(kind, 0) + 1
        if section:
            self.index.setdefault(section, []).append((title or rel, rel))

    def words(self, n: int) -> str:
        return _paragraph(self.rng, n)


def _fm(**keys) -> str:
    lines = []
    for key, value in keys.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            value = "[" + ", ".join(f'"{v}"' if "/" in str(v) else str(v) for v in value) + "]"
        lines.append(f"{key}: {value}")
    return "---\n" + "\n".join(lines) + "\n---\n"


def _silo_pages(w: _Real, repo: str) -> None:
    rng = w.rng
    pages = w.silo_pages[repo]
    mods = w.modules[repo]
    stale_pages = set(rng.sample(pages[10:], 2)) if repo == "jax" else set()
    broken_links = set(rng.sample(pages[20:], 4)) if repo == CHECKED_OUT_REPO else set()
    for rel in pages:
        commit = w.pins[repo]
        if rel in stale_pages:
            commit = _sha(rng)
            w.plant("CDB001", rel, "generated page commit differs from the pinned submodule commit")
        code_root = f"raw/code/{repo}"
        mod = rng.choice(mods)
        fm = _fm(title=f'"{repo}: {mod}"', type="codebase", codebase=repo, repo=code_root, commit=commit,
                 generated="true", tags=["codebase", repo], created="2026-04-02", updated="2026-04-02")
        lines = [f"# {mod}\n", f"Source: [{mod}]({_rel(f'{code_root}/{mod}', rel)})\n", "## Summary\n",
                 w.words(4) + "\n", "## Symbols\n", "| symbol | kind | defined at | notes |", "|---|---|---|---|"]
        for _ in range(rng.randint(40, 50)):
            target = rng.choice(mods)
            line = rng.randint(1, 420)
            name = f"{rng.choice(CODE_WORDS)}_{rng.choice(CODE_WORDS)}"
            lines.append(
                f"| `{name}` | {rng.choice(('function', 'class', 'method', 'constant'))} | "
                f"[{target.rsplit('/', 1)[1]}#L{line}]({_rel(f'{code_root}/{target}', rel)}#L{line}) | "
                f"{_sentence(rng, rng.randint(10, 18))} |"
            )
        if rel in broken_links:
            lines.append(f"| `legacy_step` | function | [removed.py#L12]({_rel(f'{code_root}/legacy/removed.py', rel)}#L12) | gone |")
            w.plant("LNK001", rel, "link into the checked-out submodule names a file it does not have")
        elif repo not in (CHECKED_OUT_REPO, LOCAL_REPO) and rng.random() < 0.02:  # unverifiable without the submodule
            lines.append(f"| `legacy_step` | function | [removed.py#L12]({_rel(f'{code_root}/legacy/removed.py', rel)}#L12) | gone |")
        lines += ["", "## Calls\n"]
        for _ in range(rng.randint(4, 8)):
            target = rng.choice(mods)
            line = rng.randint(1, 420)
            lines.append(f"- [`{target}:{line}`]({_rel(f'{code_root}/{target}', rel)}#L{line}): {_sentence(rng, 8)}")
        lines += ["", "## Related\n"]
        for other in rng.sample(pages, 6):
            if other != rel:
                lines.append(f"- [{other.rsplit('/', 1)[1][:-3]}]({_rel(other, rel)})")
        lines.append(f"- [{repo} companion]({_rel(f'wiki/codebases/{repo}.md', rel)})")
        lines += ["", "## Notes\n", w.words(rng.randint(20, 26)), "", w.words(rng.randint(8, 12)), ""]
        w.add(rel, fm + "\n".join(lines) + "\n")


def _local_checkout(w: _Real) -> None:
    """``raw/code/<LOCAL_REPO>/``: a local checkout, untracked and gitignored (no gitlink, no
    pin), with generated codebase pages that link into it and a companion page."""
    rng = w.rng
    w.modules[LOCAL_REPO] = sorted({f"{rng.choice(CODE_WORDS)}/{rng.choice(CODE_WORDS)}_{i}.py" for i in range(20)})
    w.pins[LOCAL_REPO] = None
    w.silo_pages[LOCAL_REPO] = [f"wiki/codebases/{LOCAL_REPO}/{folder}/{folder[:3]}-{i:03d}.md"
                                for folder, n in (("overview", 2), ("catalog", 22)) for i in range(n)]
    _silo_pages(w, LOCAL_REPO)
    companion = f"wiki/codebases/{LOCAL_REPO}.md"
    text = _fm(title=f"{LOCAL_REPO} codebase", type="codebase", repo=f"raw/code/{LOCAL_REPO}",
               tags=["codebase", LOCAL_REPO], created="2026-05-03", updated="2026-06-20")
    text += (f"# {LOCAL_REPO}\n\nA local checkout (not a submodule). Start at the "
             f"[overview]({_rel(w.silo_pages[LOCAL_REPO][0], companion)}).\n\n{w.words(2)}\n")
    w.add(companion, text, "Codebases", LOCAL_REPO, "codebase")


def _knowledge(w: _Real) -> None:
    """Sources, concepts (with contradictions, orphans and an ignored folder), observations, analyses."""
    rng = w.rng
    sources = []
    for i in range(500):
        rel = f"wiki/sources/src-{i:03d}-{rng.choice(CONCEPT_WORDS)}.md"
        raw = f"raw/sources/src-{i:03d}.md"
        w.files[raw] = f"source text {i}\n"
        body = f"# Source {i}\n\nFile: [{raw}]({_rel(raw, rel)})\n\n{w.words(rng.randint(14, 22))}\n\n{w.words(rng.randint(10, 16))}\n"
        if rng.random() < 0.05:  # older pages have no frontmatter at all
            text = body
        else:
            text = _fm(title=f"Source {i}", type="source", tags=["source"], created="2026-04-05", updated="2026-04-05") + body
        w.add(rel, text, "Sources", f"Source {i}", "source")
        sources.append(rel)
    concepts = [f"wiki/concepts/{CONCEPT_WORDS[i % len(CONCEPT_WORDS)]}-{i:03d}.md" for i in range(400)]
    orphans = set(concepts[-6:])
    w.concepts = [c for c in concepts if c not in orphans]
    ignored = ["wiki/concepts/lib/jax-lib-notes.md", "wiki/concepts/lib/xla-flags.md"]
    ignored_linkers = set(rng.sample(w.concepts, 4))
    unresolved = set(rng.sample(w.concepts, 10))
    resolved = set(rng.sample([c for c in w.concepts if c not in unresolved], 10))
    fenced = set(rng.sample([c for c in w.concepts if c not in unresolved | resolved], 2))
    broken = set(rng.sample([c for c in w.concepts if c not in ignored_linkers], 8))
    for rel in concepts:
        parts = [f"# {rel.rsplit('/', 1)[1][:-3]}\n", w.words(3) + "\n", "## Evidence\n"]
        for src in rng.sample(sources, 3):
            parts.append(f"- [{src.rsplit('/', 1)[1][:-3]}]({_rel(src, rel)})")
        for other in rng.sample(w.concepts, 2):
            parts.append(f"- see [{other.rsplit('/', 1)[1][:-3]}]({_rel(other, rel)})")
        repo = rng.choice(REPOS)
        parts.append(f"- code: [{repo}]({_rel(f'wiki/codebases/{repo}.md', rel)})\n")
        claim = f"**Claim**: {_sentence(rng, 12)}\n"
        if rel in unresolved | resolved:
            obs = f"wiki/observations/obs-{rng.randint(0, 199):03d}.md"
            parts.append(f"> [!warning] Contradicted by [{obs.rsplit('/', 1)[1][:-3]}]({_rel(obs, rel)}) on 2026-06-1{rng.randint(0, 9)}")
            if rel in resolved:
                parts.append(f"> **Resolved** 2026-06-2{rng.randint(0, 9)}: the claim holds only below 8k context.")
            else:
                w.plant("CON001", rel, "unresolved contradiction block")
            parts.append("")
        if rel in fenced:
            parts.append("How to mark a contradiction:\n\n```markdown\n> [!warning] Contradicted by [page](path) on YYYY-MM-DD\n```\n")
        parts.append(claim)
        if rel in ignored_linkers:
            target = rng.choice(ignored)
            parts.append(f"Flags: [{target.rsplit('/', 1)[1][:-3]}]({_rel(target, rel)})\n")
            w.plant("LNK002", rel, "link to a page that git ignores (lib/ rule): it will not be published")
        if rel in broken:
            parts.append(f"Older notes: [renamed]({_rel('wiki/concepts/' + rng.choice(CONCEPT_WORDS) + '-renamed.md', rel)})\n")
            w.plant("LNK001", rel, "link to a concept page that was renamed")
        parts.append(w.words(rng.randint(10, 16)) + "\n\n" + w.words(rng.randint(6, 10)) + "\n")
        name = rel.rsplit("/", 1)[1][:-3]
        text = _fm(title=name, type="concept", tags=["concept"], created="2026-04-10", updated="2026-06-01") + "\n".join(parts)
        if rel in orphans:
            w.plant("IDX002", rel, "orphan: no page links it and the index does not list it")
            w.add(rel, text, kind="concept")
        else:
            w.add(rel, text, "Concepts", name, "concept")
    for rel in ignored:
        w.add(rel, _fm(title=rel.rsplit("/", 1)[1][:-3], type="concept", created="2026-04-10", updated="2026-04-10")
              + f"# {rel}\n\n{w.words(3)}\n", kind="concept")
    for i in range(200):
        rel = f"wiki/observations/obs-{i:03d}.md"
        concept = rng.choice(w.concepts)
        text = _fm(title=f"Observation {i}", type="observation", tags=["observation"], created="2026-05-02", updated="2026-05-02")
        text += f"# Observation {i}\n\n{w.words(3)}\n\nAbout [{concept.rsplit('/', 1)[1][:-3]}]({_rel(concept, rel)}).\n"
        w.add(rel, text, "Observations", f"Observation {i}", "observation")
    for i in range(70):
        rel = f"wiki/analyses/analysis-{i:03d}.md"
        text = _fm(title=f"Analysis {i}", type="analysis", tags=["analysis"], created="2026-06-02", updated="2026-06-02")
        text += f"# Analysis {i}\n\n{w.words(6)}\n"
        w.add(rel, text, "Analyses", f"Analysis {i}", "analysis")


def _pick(rng: random.Random, pool: list, n: int, taken: set) -> set:
    chosen = set(rng.sample([p for p in pool if p not in taken], n))
    taken |= chosen
    return chosen


def _lanes(w: _Real) -> None:
    w.add("wiki/experiments/program.md", ROOT_PROGRAM)  # the cascade root
    for model, lane, count, subdir, sizes, hws in REAL_LANES:
        _lane(w, model, lane, count, subdir, sizes, hws)


HEAVY_LANE = ("qwen3", "jax")  # where most planted experiment defects live


def _lane(w: _Real, model: str, lane: str, count: int, subdir: bool, sizes, hws) -> None:
    from wikiengine.core.identity import workload_name

    rng = w.rng
    folder = f"wiki/experiments/{model}_autoresearch_optimization"
    lane_dir = f"{folder}/{lane}"
    page_dir = f"{lane_dir}/experiments" if subdir else lane_dir
    slug_model = f"{model}-{lane}"
    rows = [f"{s}/{h}" for s in sizes for h in hws]
    w.rows[slug_model] = rows
    older = (model, lane) == OLDER_LANE
    heavy = (model, lane) == HEAVY_LANE
    span = 100  # days
    positions = list(range(12, count - 4))
    taken: set = set()
    plants = {
        name: _pick(rng, positions, n if heavy else 0, taken)
        for name, n in (("prefixed", 6), ("dup", 3), ("no-setup", 2), ("no-mechanism", 2), ("tbd-profile", 2),
                        ("backfilled-supported", 1), ("verdict-disagrees", 1), ("status-verdict", 1),
                        ("bad-variant", 3), ("dup-section", 1), ("unlogged", 3), ("long-workload", 2),
                        ("free-status", 4), ("running", 3), ("bad-yaml", 1))
    }
    if not older and not heavy:
        plants["bad-variant"] = _pick(rng, positions, 1, taken)
        plants["running"] = _pick(rng, positions, 1, taken)
    retries = _pick(rng, positions, 8 if not older else 0, taken)
    reruns = _pick(rng, positions, 1 if (model, lane) == RERUN_LANE else 0, taken)  # v057-b ... v057-m
    stubs = set(range(count - 2, count))  # the last two are stubs left in progress
    lane_log: list[tuple[dt.date, str]] = []
    results = ["exp_id\tdate\ttps\tmfu_percent\tstep_time_ms\tpeak_hbm_gib\tconfig\tstatus\tdescription"]
    supported: dict[str, list[tuple[float, str, str]]] = {}
    filed_by_day: list[tuple[dt.date, str, str]] = []
    number = 0
    ids: set[str] = set()
    seen_numbers: list[int] = []
    for pos in range(count):
        day = REAL_START + dt.timedelta(days=pos * span // count)
        topic = rng.choice(TOPICS)
        slug = f"{topic[0]}-{rng.choice(('a', 'b', 'wide', 'narrow', 'sweep', 'v2'))}"
        if pos in plants["dup"]:
            vnum = rng.choice(seen_numbers[:-5])  # reuses an earlier v-id
        else:
            number += 1
            vnum = number
        seen_numbers.append(vnum)
        vid = f"exp{vnum:02d}" if older else f"v{vnum:03d}"
        variant = rng.choice(rows)
        verdict = rng.choices(VERDICTS, VERDICT_WEIGHTS)[0]
        in_progress = pos in stubs or pos in plants["running"]
        attempts = ("", "b") if pos in retries else ("", *(f"-{c}" for c in HYPHEN_RERUNS)) if pos in reruns else ("",)
        for attempt in attempts:
            page_id = vid + attempt
            if older:
                name = f"{day.isoformat()}-{vid}-{slug}-{'accepted' if verdict == 'supported' else 'rejected'}.md"
            elif pos in plants["prefixed"]:
                name = f"{day.isoformat()}-{model}-{lane}-{page_id}-{slug}.md"
            else:
                name = f"{day.isoformat()}-{page_id}-{slug}.md"
            rel = f"{page_dir}/{name}"
            ids.add(page_id)
            if pos in plants["prefixed"]:
                w.plant("EXP001", rel, "text before the v-id in the file name")
            if pos in plants["dup"]:
                w.plant("EXP008", rel, "reuses an earlier page's v-id (finding on the later page)")
            wl = workload_name(REAL_PREFIX, model, lane, vnum, slug, attempt.lstrip("-")) if not older else None
            if pos in plants["long-workload"]:
                wl = f"{REAL_PREFIX}-{model}-{lane}-v{vnum:03d}-{slug}-extra-long-suffix"
                w.plant("WKL001", rel, "workload name of 40 characters or more")
            text, mfu = _experiment(w, rel, page_id, slug, topic, day, variant, verdict, in_progress, older, wl, plants, pos)
            w.add(rel, text, kind="experiment")
            profile = f"raw/profiles/{day.isoformat()}-{page_id}-{slug}"
            if not in_progress and rng.random() < 0.3:
                w.profiles.append(profile)
            exp_label = f"{page_id}-{slug}"
            if heavy and not in_progress and day >= SPLIT_DATE and rng.random() < 0.5:  # the dispatch, logged too
                lane_log.append((day, f"## [{day.isoformat()}] run-experiment | {page_id}-{slug} dispatched on {variant}\n\n"
                                      f"**Op**: run-experiment\n**Pages created**: [{page_id}]({_rel(rel, lane_dir + '/log.md')})\n"
                                      "**Notes**: stub filed before dispatch.\n"))
            if in_progress:
                # before the split there were no lane logs: the dispatch went to the global log
                log_rel = "wiki/log.md" if day < SPLIT_DATE else lane_dir + "/log.md"
                (w.global_log if day < SPLIT_DATE else lane_log).append((day, f"## [{day.isoformat()}] run-experiment | {exp_label} dispatched on {variant}\n\n"
                                      f"**Op**: run-experiment\n**Pages created**: [{page_id}]({_rel(rel, log_rel)})\n"
                                      f"**Key result**: (Pending)\n**Notes**: stub filed before dispatch.\n"))
                continue
            filed_by_day.append((day, page_id, rel))
            entry = f"## [{day.isoformat()}] loop-iteration | {exp_label} on {variant}: {verdict} ({rng.uniform(-2, 2):+.2f}% vs frontier)\n"
            if pos not in plants["unlogged"]:
                if day < SPLIT_DATE:
                    w.global_log.append((day, entry))
                else:
                    lane_log.append((day, entry))
            else:
                w.plant("EXP013", rel, "filed page not named in its lane's log")
            results.append(f"{page_id}\t{day.isoformat()}\t{rng.randint(2000, 9000)}\t{mfu}\t{rng.randint(200, 900)}\t"
                           f"{rng.randint(20, 90)}\t{topic[0]}=on remat={rng.choice(('full', 'dots', 'minimal'))}\t{'keep' if verdict == 'supported' else 'discard'}\t{topic[1]}")
            if verdict == "supported" and pos not in (plants["dup"] | plants["bad-variant"] | plants["backfilled-supported"]
                                                  | plants["bad-yaml"]):
                supported.setdefault(variant, []).append((mfu, page_id, rel))
    w.lane_ids[(model, lane)] = ids
    _lane_files(w, model, lane, lane_dir, lane_log, results, heavy)
    _model_page(w, model, lane, sizes, hws, supported, filed_by_day)


def _experiment(w, rel, page_id, slug, topic, day, variant, verdict, in_progress, older, workload, plants, pos):
    rng = w.rng
    slug_base, what, bucket, signal = topic
    backfilled = rng.random() < 0.03 and not in_progress and pos not in plants["backfilled-supported"]
    if backfilled:
        verdict = rng.choice(("inconclusive", "invalid"))
    if pos in plants["free-status"] and verdict == "invalid":
        verdict = "refuted"  # an invalid page has no Profile: a free status would read as a missing one (EXP002)
    if pos in plants["backfilled-supported"]:
        backfilled, verdict = True, "supported"
        w.plant("EXP005", rel, "backfilled page claims supported")
    never_ran = not in_progress and not backfilled and verdict == "refuted" and rng.random() < 0.06
    mfu_base = round(rng.uniform(28, 52), 1)
    mfu = round(mfu_base * {"supported": rng.uniform(1.01, 1.1), "refuted": rng.uniform(0.9, 1.0)}.get(verdict, 1.0), 1)
    model_slug = rel.split("/")[2].split("_")[0] + "-" + rel.split("/")[3]
    if model_slug == "-".join(NO_LOG_LANE) and rng.random() < 0.3:
        model_slug = "-".join(HEAVY_LANE)  # names another lane's model page (its variant is a row there too)
        w.plant("EXP017", rel, "model: names another lane's model page")
    keys = {"title": f'"{page_id}: {what}"', "type": "experiment", "hypothesis": rng.choice(w.hyp_slugs[:-OPEN_HYPS]),
            "model": model_slug, "variant": f'"{variant}"', "commit": f'"{_sha(rng, 7)}"'}
    if pos in plants["bad-variant"]:
        keys["variant"] = '"8B/v6e-32"'
        w.plant("EXP010", rel, "variant is not a row of the model page's matrix")
    last, opened = w.hyp_named.get(keys["hypothesis"], (day, False))
    w.hyp_named[keys["hypothesis"]] = (max(last, day), opened or in_progress)
    if in_progress:
        status = "in_progress"
        if pos in plants["running"]:
            status = rng.choice(("running", "pending"))
            w.plant("WK002", rel, f"status {status} is outside the enum")
        keys["status"] = status
        w.plant("EXP011", rel, "stub left in progress for weeks")
    elif pos in plants["free-status"]:
        bad = rng.choice(("status: completed", "verdict: refuted/tie", "verdict: provisional-supported", "status: TBD"))
        key, value = bad.split(": ")
        keys[key] = value
        if key == "status":
            keys["verdict"] = verdict
        w.plant("WK002", rel, f"{bad} is outside the enum")
    elif pos in plants["status-verdict"]:
        keys["status"], keys["verdict"] = "refuted", "supported"
        w.plant("EXP009", rel, "status and verdict disagree")
    elif older or (day < dt.date(2026, 5, 15) and rng.random() < 0.7):
        keys["verdict"] = verdict  # older form: a verdict with no status is a filed page
    elif rng.random() < 0.1:
        keys["status"] = verdict  # older form: status: <verdict>
    else:
        keys["status"], keys["verdict"] = "filed", verdict
    if backfilled:
        keys["backfilled"] = "true"
    keys.update(tags=["experiment", slug_base], created=day.isoformat(), updated=day.isoformat())
    fm = _fm(**keys)
    if pos in plants["bad-yaml"]:
        fm = fm.replace("tags: [", "tags: [[", 1)
        w.plant("WK001", rel, "frontmatter is not valid YAML")
    depth = rel.count("/")
    up = "../" * depth
    profile_dir = f"raw/profiles/{day.isoformat()}-{page_id}-{slug}/"
    s = [f"# {page_id}: {what}\n", "## Hypothesis under test\n"]
    if backfilled:
        s.append("**Hypothesis not recovered**: page filed by BACKFILL after the run completed without a stub.\n")
    else:
        s.append(f"**Hypothesis**: {what} raises MFU on {variant} by at least 2%.\n")
        if pos not in plants["no-mechanism"]:
            s.append(f"**Mechanism**: {w.words(2)}\n")
        else:
            w.plant("EXP003", rel, "Hypothesis under test lacks the Mechanism paragraph")
        s.append(f"**Predicted signal**: {bucket} drops below {rng.randint(4, 11)}% of step time; {signal} present.\n")
        s.append(f"**Falsification criterion**: MFU gain under 0.5 points, or no {signal}.\n")
    if pos not in plants["no-setup"]:
        wl = "`<workload-name>`" if in_progress and rng.random() < 0.5 else f"`{workload}`"
        s += ["## Setup\n", *([f"**Workload**: {wl}\n"] if workload else []), f"Flags: `--{slug_base}=on`; {w.words(1)}\n",
              f"Profile folder: [{profile_dir}]({up}{profile_dir})\n"]
        if never_ran:
            s.append("Steps run: 0 (the compile failed before step 0).\n")
        if rng.random() < 0.04:  # shell fragments in prose are not workload names
            s.append(SHELL_PROSE + "\n")
    else:
        w.plant("EXP002", rel, "filed page without a Setup section")
    if in_progress:
        s += ["## Baseline comparison\n", "(Pending)\n", "## Results\n", "TBD\n", "## Profile\n", "TBD\n",
              "## HLO Dump\n", "(Pending)\n", "## Verdict\n", "pending\n"]
        return fm + "\n".join(s), None
    s += ["## Baseline comparison\n", f"Against the frontier at MFU {mfu_base}%. {w.words(1)}\n"]
    head = "## Results" + (f" — marginal new frontier (+{mfu - mfu_base:.2f}%)" if verdict == "supported" and rng.random() < 0.3 else "")
    s += [head + "\n", "| metric | baseline | this run | delta | noise band |\n|---|---:|---:|---:|---:|\n"
          f"| MFU (%) | {mfu_base} | {mfu} | {mfu - mfu_base:+.1f} | ±0.3 |\n"
          f"| step time (ms) | {rng.randint(300, 900)} | {rng.randint(300, 900)} | - | ±4 |\n"]
    skip_profile = backfilled or verdict == "invalid" or never_ran
    if not skip_profile:
        profile_text = "TBD" if pos in plants["tbd-profile"] else (
            f"[xprof trace]({up}{profile_dir}trace.json.gz): {bucket} at {rng.randint(3, 30)}% of step time. {w.words(2)}")
        if pos in plants["tbd-profile"]:
            w.plant("EXP004", rel, "Profile is a placeholder on a filed page")
        s += ["## Profile\n", profile_text + "\n"]
    if not (skip_profile or older):
        audit = rng.choice(FIRING_FORMS).format(signal=signal) if day >= FIRING_RULE_DATE else "(older than the firing-audit rule)"
        s += ["## HLO Dump\n", audit + "\n", f"Dump: [hlo]({up}{profile_dir}hlo/)\n"]
    s += ["## Observations\n", w.words(rng.randint(12, 20)) + "\n", w.words(rng.randint(8, 14)) + "\n"]
    if rng.random() < 0.03:  # a superseded claim, marked with a callout other than "Contradicted by"
        s.append(f"> [!warning] Refuted by v{rng.randint(10, 60):03d}: the gain held only at 8k context.\n")
        w.plant("CON002", rel, "a Refuted by callout with no Resolved line")
    said = "refuted" if pos in plants["status-verdict"] else verdict  # says what its status says
    if pos in plants["verdict-disagrees"]:
        said = "refuted" if verdict != "refuted" else "supported"
        w.plant("EXP006", rel, "the Verdict section disagrees with the frontmatter")
    title = rng.choice(("Verdict + reasoning", "Verdict", f"Verdict: {verdict}"))
    if never_ran:
        title = "Verdict: refuted (compile-time OOM)"
        s.append(f"## {title}\n\n**{said}** — the run never executed: compile-time OOM before step 0, so there is no profile.\n")
    else:
        s.append(f"## {title}\n\n**{said}** — {w.words(2)}\n")
    if pos in plants["dup-section"]:
        s.append("## Observations\n\nA second observations section.\n")
        w.plant("EXP012", rel, "two Observations sections")
    s += ["## Cross-variant relevance\n", w.words(1) + "\n", "## Next hypotheses\n", f"- {_sentence(rng, 8)}\n"]
    return fm + "\n".join(s), mfu


def _lane_files(w: _Real, model: str, lane: str, lane_dir: str, lane_log: list, results: list, heavy: bool) -> None:
    folder = lane_dir.rsplit("/", 1)[0]
    older = (model, lane) == OLDER_LANE
    if f"{folder}/program.md" not in w.files:
        text = f"# {model} program (model level)\n\nUSER_PREFIX = {REAL_PREFIX}\n\n## The goal\n\nRaise {model} MFU.\n"
        if older:
            text += ("\n## Page conventions\n\nThis model's lanes predate the wiki-wide template: pages are named "
                     "`<date>-exp<NN>-<slug>-<accepted|rejected|potential>.md`, carry `verdict:` only, and have no "
                     "HLO Dump section (the lane's `## Config` says so in `page_conventions`).\n")
        w.add(f"{folder}/program.md", text)
    conventions = ("page_conventions:\n  id_pattern: 'exp\\d+'\n"
                   "  required_sections: [Hypothesis under test, Setup, Results, Profile, Verdict]\n") if older else ""
    if (model, lane) not in NO_PROGRAM_LANES:
        w.add(f"{lane_dir}/program.md", f"## Setup\n\n{lane} lane of {model}.\n\n## Config\n\n```yaml\nparallelism: 2\n"
              "tpu_type: v5p-16\ntopology: 2x2x2\nwake_interval_s: 600\nstorage_root: gs://example-bucket/autoresearch\n"
              f"{conventions}```\n")
    w.files[f"{lane_dir}/RESULTS.tsv"] = "\n".join(results) + "\n"
    if heavy:
        w.add(f"{lane_dir}/OBSERVATIONS.md", f"# Observations of the {lane} lane\n\n{w.words(4)}\n")
    if (model, lane) == ("llama3", "tpu"):
        w.add(f"{lane_dir}/DEPLOY.md", f"# Deploying the {lane} lane\n\n{w.words(3)}\n")
        w.add(f"{lane_dir}/README.md", f"# {lane}\n\nThe {lane} lane of {model}.\n")
    lane_log.append((SPLIT_DATE, f"## [{SPLIT_DATE.isoformat()}] start | session after the log split\n\n**Op**: start\n"
                                 f"**Cluster pool**: {REAL_PREFIX}-v5p-16\n**Parallelism**: 2\n"
                                 f"**First-pick hypothesis**: {w.hyp_slugs[0]}\n**Notes**: lane log begins here.\n"))
    if (model, lane) == NO_LOG_LANE:  # pages, but no log.md: the LINT skill names the lane (on its first page)
        first = min(rel for rel in w.files if rel.startswith(lane_dir + "/") and rel.endswith(".md"))
        w.plant("LAY003", first, "a lane with experiment pages but no log.md")
        return
    if heavy or (model, lane) == ("llama3", "torchax"):
        stop = dt.date(2026, 6, 15)
        # before the rule's adoption (RULE_ADOPTED) a stop's audit was advisory: torchax's quotes no ALL-CLEAR
        audit = "`ALL-CLEAR: no open stubs, ledger matches pages`" if heavy else "checked by hand, see the notes"
        lane_log.append((stop, f"## [{stop.isoformat()}] stop | session paused for the retrospective\n\n**Op**: stop\n"
                               f"**Final audit**: {audit}\n"))
        lane_log.append((stop + dt.timedelta(days=1), f"## [{(stop + dt.timedelta(days=1)).isoformat()}] start | second session\n\n"
                         f"**Op**: start\n**Cluster pool**: {REAL_PREFIX}-v5p-16\n**Parallelism**: 2\n"
                         f"**First-pick hypothesis**: {w.hyp_slugs[1]}\n**Notes**: resumed.\n"))
        if heavy:
            retro = f"wiki/analyses/{stop.isoformat()}-{model}-{lane}-retrospective.md"
            w.add(retro, _fm(title=f"{model} {lane} retrospective", type="analysis", model=model, lane=lane,
                             created=stop.isoformat(), updated=stop.isoformat()) + f"# Retrospective\n\n{w.words(5)}\n",
                  "Analyses", f"{model} {lane} retrospective", "analysis")
        else:
            w.plant("RUN001", f"{lane_dir}/log.md", "a stop with no retrospective for the lane")
    if heavy:
        _grown_log_defects(w, lane_dir, lane_log)
        day = dt.date(2026, 6, 20)
        lane_log.append((day, f"## [{day.isoformat()}] loop-iteraton | v120-typo on 8B/v6e-8: refuted (-0.1%)\n"))
        w.plant("LOG004", f"{lane_dir}/log.md", "unknown op loop-iteraton")
        for vid in ("v901", "v902"):
            day += dt.timedelta(days=1)
            lane_log.append((day, f"## [{day.isoformat()}] loop-iteration | {vid}-ghost on 8B/v6e-8: refuted (-0.3%)\n"))
            w.plant("LOG005", f"{lane_dir}/log.md", f"loop-iteration names {vid}, which has no page")
        for _ in range(2):
            day += dt.timedelta(days=1)
            lane_log.append((day, f"## {day.isoformat()} manual | lane notes tidied\n\n**Op**: manual\n**Notes**: tidy.\n"))
            w.plant("LOG001", f"{lane_dir}/log.md", "heading without [date]")
        day += dt.timedelta(days=1)
        lane_log.append((day, f"## [{day.isoformat()}] manual | reviewed hypotheses\n\n**Op**: manual\n**Notes**: reviewed.\n"))
    # Newest first; within a day a start is the oldest entry and a stop the newest.
    rank = {"start": 0, "stop": 2}
    ordered = sorted(lane_log, key=lambda item: (item[0], rank.get(re.match(r"## \[?[\d-]+\]? (\S+)", item[1])[1], 1)),
                     reverse=True)
    if heavy:
        for start in (30, 60):  # two entries appended in the wrong place
            i = next(i for i in range(start, len(ordered) - 1) if ordered[i][0] > ordered[i + 1][0])
            ordered[i], ordered[i + 1] = ordered[i + 1], ordered[i]
            w.plant("LOG002", f"{lane_dir}/log.md", "entry out of newest-first order")
    entries = [text for _day, text in ordered]
    w.add(f"{lane_dir}/log.md", f"# {model} / {lane} log\n\n" + "\n".join(entries))


def _grown_log_defects(w: _Real, lane_dir: str, lane_log: list) -> None:
    """A long lane log's pre-existing defects (conventions.md, "A wiki that grew by hand"):
    a second stop followed by iterations with no new start, and iterations whose id
    belongs to another page (the slug of another experiment)."""
    rng = w.rng
    model, lane = lane_dir.split("/")[2].split("_")[0], lane_dir.rsplit("/", 1)[1]
    stop = LATE_STOP
    retro = f"wiki/analyses/{stop.isoformat()}-{model}-{lane}-retrospective.md"
    w.add(retro, _fm(title=f"{model} {lane} retrospective 2", type="analysis", model=model, lane=lane,
                     created=stop.isoformat(), updated=stop.isoformat()) + f"# Retrospective\n\n{w.words(4)}\n",
          "Analyses", f"{model} {lane} retrospective 2", "analysis")
    lane_log.append((stop, f"## [{stop.isoformat()}] stop | budget spent\n\n**Op**: stop\n"
                           "**Final audit**: `ALL-CLEAR: no open stubs, ledger matches pages`\n"))
    iterations = [i for i, (_d, t) in enumerate(lane_log) if " loop-iteration | v" in t]
    for _ in [i for i, (d, t) in enumerate(lane_log) if d > stop and re.search(r"\] (loop-iteration|run-experiment) \|", t)]:
        w.plant("RUN004", f"{lane_dir}/log.md", "an iteration after a stop with no new start")
    early = [i for i in iterations if lane_log[i][0] < stop]
    for i in rng.sample(early, 3):  # the id is right, the slug is another page's
        day, text = lane_log[i]
        other = re.search(r"\| (v\d{3}[a-z]?)-(\S+) on", lane_log[rng.choice(early)][1])
        mine = re.search(r"\| (v\d{3}[a-z]?)-(\S+) on", text)
        if other and mine and other[2] != mine[2]:
            lane_log[i] = (day, text.replace(f"| {mine[1]}-{mine[2]} on", f"| {mine[1]}-{other[2]} on", 1))


def _model_page(w: _Real, model: str, lane: str, sizes, hws, supported: dict, filed: list) -> None:
    rng = w.rng
    slug = f"{model}-{lane}"
    rel = f"wiki/models/{slug}.md"
    last = max(day for day, _id, _rel in filed)
    updated = last
    if slug == "llama3-torchax":
        updated = last - dt.timedelta(days=20)
        w.plant("MOD004", rel, "updated is older than the lane's last filed experiment")
    rows = []
    planted = False
    units = (model, lane) == UNIT_LANE
    for size in sizes:
        for hw in hws:
            key = f"{size}/{hw}"
            ranked = sorted(supported.get(key, []), reverse=True)
            cell = "—"
            if ranked:
                mfu, exp_id, exp_rel = ranked[0]
                if slug == "qwen3-jax" and len(ranked) > 1 and not planted:
                    mfu, exp_id, exp_rel = ranked[1]
                    planted = True
                    w.plant("MOD002", rel, "Current best is not the best supported experiment of its row")
                cell = f"[{exp_id}]({_rel(exp_rel, rel)}) " + (_figures(rng, mfu) if units else f"MFU {mfu}%")
            if slug == "llama3-tpu" and not planted and ranked:
                refuted = [r for r in w.files if r.startswith("wiki/experiments/llama3_autoresearch_optimization/tpu/")
                           and "verdict: refuted" in w.files[r] and f'variant: "{key}"' in w.files[r]]
                if refuted:
                    cell = f"[{refuted[0].rsplit('/', 1)[1][11:15]}]({_rel(refuted[0], rel)}) MFU 30.1%"
                    planted = True
                    w.plant("MOD001", rel, "Current best names a refuted experiment")
            status = rng.choice(("live", "open", "blocked", "parked"))
            baseline = _figures(rng, 30.0) if units else "MFU 30.0%"
            rows.append(f"| {size} | {hw} | {status} | {baseline} | {cell} | {rng.randint(0, 5)} | {cell} |")
    sections = {
        "Target metrics": "MFU at equal loss.",
        "How to run": f"`python -m {model}.train --variant <size>`.",
        "Variant matrix": ("| Size | Hardware | Status | Baseline (step / TPS / MFU) | Current best (step / TPS / MFU) | "
                           "Open hyps | Frontier exp |\n" if units else
                           "| Size | Hardware | Status | Baseline | Current best | Open hyps | Frontier exp |\n")
                          + "|---|---|---|---|---|---|---|\n" + "\n".join(rows),
        "Cross-variant open hypotheses": "- " + _sentence(rng, 8),
        "Variant-specific open hypotheses": "- " + _sentence(rng, 8),
        "Retired hypotheses": "- " + _sentence(rng, 8),
        "Knobs translation matrix": "| knob | jax | torchax |\n|---|---|---|\n| remat | policy | checkpoint |",
        "Iteration ladder": "1. baseline 2. kernels 3. sharding",
    }
    if slug == "gemma3-maxtext":
        del sections["Knobs translation matrix"]
        w.plant("MOD003", rel, "missing the Knobs translation matrix section")
    text = _fm(title=slug, type="model", architecture=model, lane=lane, sizes=list(sizes), hardwares=list(hws),
               tags=["model"], created=REAL_START.isoformat(), updated=updated.isoformat())
    text += f"# {model} on {lane}\n\n" + "".join(f"## {t}\n\n{b}\n\n" for t, b in sections.items())
    w.add(rel, text, "Models", slug, "model")


def _figures(rng: random.Random, mfu: float) -> str:
    """A multi-figure cell as the template writes it: ``512 ms / 31,955 TPS / 20.5% MFU``."""
    return f"{rng.randint(300, 900)} ms / {rng.randint(8000, 40000):,} TPS / {mfu}% MFU"


def _hypotheses(w: _Real) -> None:
    rng = w.rng
    models = {f"{m}-{ln}": [f"{s}/{h}" for s in sizes for h in hws] for m, ln, _n, _s, sizes, hws in REAL_LANES}
    planted = set(rng.sample(range(150), 3))
    for i in range(150):
        slug = f"{rng.choice(TOPICS)[0]}-{i:03d}"
        w.hyp_slugs.append(slug)
        rel = f"wiki/hypotheses/{slug}.md"
        model = rng.choice(sorted(models))
        variants = rng.sample(models[model], min(2, len(models[model])))
        if i in planted:
            variants = ["8B/v6e-32"]
            w.plant("HYP002", rel, "variants names a row the model page does not have")
        status = "open" if i >= 150 - OPEN_HYPS else rng.choice(
            ("open", "in_progress", "supported", "refuted", "inconclusive", "retired"))
        if status in ("open", "in_progress"):
            w.hyp_open[slug] = rel
        text = _fm(title=slug, type="hypothesis", model=model, variants=variants, status=status,
                   expected_gain='"+1-3% MFU"', confidence=rng.choice(("low", "medium", "high")),
                   effort=rng.choice("SML"), origin=rng.choice(("profile", "paper", "retrospective")),
                   tags=["hypothesis"], created="2026-04-20", updated=HYP_UPDATED.isoformat())
        concept = rng.choice(w.concepts)
        text += f"# {slug}\n\n{w.words(3)}\n\nBackground: [{concept.rsplit('/', 1)[1][:-3]}]({_rel(concept, rel)}).\n"
        w.add(rel, text, "Hypotheses", slug, "hypothesis")


HYP_UPDATED = dt.date(2026, 5, 20)  # every hypothesis page's own `updated:`
IDLE_DAYS = 14  # the wiki's LINT skill: an open hypothesis nothing tested for two weeks


def _plant_idle_hypotheses(w: _Real) -> None:
    """The open hypotheses no page has named within IDLE_DAYS of the newest experiment, and
    none still open names: the wiki's own LINT skill lists them (HYP004)."""
    newest = max(day for day, _open in w.hyp_named.values())
    for slug, rel in sorted(w.hyp_open.items()):
        last, opened = w.hyp_named.get(slug, (None, False))
        touched = max(d for d in (last, HYP_UPDATED) if d is not None)
        if not opened and (newest - touched).days > IDLE_DAYS:
            w.plant("HYP004", rel, f"open, last touched {touched}: idle {(newest - touched).days} days")


def _refuted_patterns(w: _Real) -> None:
    rng = w.rng
    for model in sorted({m for m, *_ in REAL_LANES}):
        if model == OLDER_LANE[0]:
            continue
        rel = f"wiki/experiments/{model}_autoresearch_optimization/refuted-patterns.md"
        lines = [f"# Refuted patterns of {model}\n"]
        for (m, lane), ids in sorted(w.lane_ids.items()):
            if m == model:
                for vid in sorted(rng.sample(sorted(i for i in ids if len(i) == 4), 6)):
                    lines.append(f"- **{vid}** ({lane}): {_sentence(rng, 8)}")
        if model == HEAVY_LANE[0]:
            for vid in ("v999", "v998"):
                lines.append(f"- **{vid}** (jax): {_sentence(rng, 8)}")
                w.plant("HYP003", rel, f"cites {vid}, which no lane of the model has")
        w.add(rel, _fm(title=f"{model} refuted patterns", type="analysis", created="2026-06-01", updated="2026-06-30")
              + "\n".join(lines) + "\n")


def _kernels(w: _Real) -> None:
    rng = w.rng
    w.add("wiki/kernel_experiments/program.md", "# Kernel program (root)\n\n## Setup\n\nPallas kernels, verified by the kernel-verifier.\n")
    for kernel, count in KERNEL_FAMILIES:
        lane_dir = f"wiki/kernel_experiments/{kernel}/pallas"
        w.add(f"wiki/kernel_experiments/{kernel}/program.md", f"# {kernel}\n\n## The goal\n\nFaster {kernel}.\n")
        w.add(f"{lane_dir}/program.md", "## Setup\n\nOne v5p-8 host.\n")
        log = []
        for i in range(1, count + 1):
            day = REAL_START + dt.timedelta(days=i)
            verdict = rng.choices(VERDICTS, VERDICT_WEIGHTS)[0]
            rel = f"{lane_dir}/{day.isoformat()}-v{i:03d}-tile-{rng.choice(('128', '256', '512'))}.md"
            keys = dict(title=f'"v{i:03d} {kernel}"', type="experiment", model=kernel, variant='"bf16-4k/v5p-8"',
                        status="filed", verdict=verdict, activity=rng.choice(("optimization", "capability-eval")),
                        verified_by="kernel-verifier" if verdict == "supported" else None,
                        verification_receipt=f"raw/profiles/{kernel}-v{i:03d}/receipt.json", created=day.isoformat(),
                        updated=day.isoformat())
            text = _fm(**keys) + (f"# v{i:03d}\n\n## Hypothesis under test\n\n**Hypothesis**: a {kernel} tile.\n\n"
                                  f"## Candidate ledger\n\n| candidate | us | verified |\n|---|---:|---|\n| a | {rng.randint(50, 90)} | yes |\n\n"
                                  f"## Verdict\n\n**{verdict}** — {w.words(1)}\n")
            w.add(rel, text)
            log.append(f"## [{day.isoformat()}] loop-iteration | v{i:03d}-tile on bf16-4k/v5p-8: {verdict} (+0.1% vs frontier)\n")
        w.add(f"{lane_dir}/log.md", f"# {kernel} log\n\n" + "\n".join(reversed(log)))
        fam = f"wiki/kernels/{kernel}.md"
        w.add(fam, _fm(title=kernel, type="model", architecture=kernel, lane="pallas", created="2026-04-01", updated="2026-07-10")
              + f"# {kernel}\n\n## Variant matrix\n\n| Op-point | Hardware | Status |\n|---|---|---|\n| bf16-4k | v5p-8 | live |\n",
              "Kernels", kernel, "model")


def _global_and_index(w: _Real) -> None:
    rng = w.rng
    entries = list(w.global_log)
    for m, ln, *_ in REAL_LANES:
        entries.append((REAL_START, f"## [{REAL_START.isoformat()}] start | {m} / {ln} first session\n\n**Op**: start\n"
                                    f"**Cluster pool**: {REAL_PREFIX}-v5p-16\n**Parallelism**: 1\n"
                                    f"**First-pick hypothesis**: {w.hyp_slugs[2]}\n**Notes**: before the log split.\n"))
    for i in range(120):
        day = SPLIT_DATE + dt.timedelta(days=i * 70 // 120)
        op = GLOBAL_OPS[i % len(GLOBAL_OPS)]
        entries.append((day, f"## [{day.isoformat()}] {op} | {_sentence(rng, 6)[:-1]}\n\n**Op**: {op}\n"
                             f"**Pages updated**: {rng.randint(1, 9)}\n**Notes**: {_sentence(rng, 8)}\n"))
    for day in (dt.date(2026, 6, 2), dt.date(2026, 6, 9)):
        entries.append((day, f"## [{day.isoformat()}] loop-iteration | v140-splash-a on 8B/v6e-8: refuted (-0.2%)\n"))
        w.plant("LOG003", "wiki/log.md", "loop-iteration in the global log after the split")
    day = dt.date(2026, 6, 5)
    entries.append((day, f"## [{day.isoformat()}] ingest-sorce | a typo op\n\n**Op**: ingest-sorce\n**Notes**: typo.\n"))
    w.plant("LOG004", "wiki/log.md", "unknown op ingest-sorce")
    text = "# Log\n\n" + "\n".join(t for _d, t in sorted(entries, key=lambda item: item[0], reverse=True))
    w.add("wiki/log.md", text)
    counts = {"Sources": "source", "Codebases": "codebase", "Concepts": "concept", "Hypotheses": "hypothesis",
              "Observations": "observation", "Analyses": "analysis"}
    parts = ["# Index\n", "The catalog of the wiki, one section per page type.\n"]
    for section, items in w.index.items():
        n = w.type_count.get(counts.get(section, ""), len(items)) if section in counts else len(items)
        if section == "Observations":
            n += 3
            w.plant("IDX001", "wiki/index.md", "Observations count is 3 too high")
        if section == "Analyses":
            n -= 1
            w.plant("IDX001", "wiki/index.md", "Analyses count is 1 too low")
        parts.append(f"## {section} ({n})\n")
        parts += [f"- [{title}]({_rel(rel, 'wiki/index.md')})" for title, rel in items]
        if section == "Concepts":  # one page listed twice: N counts pages, not lines
            parts.append(f"- [{items[3][0]}]({_rel(items[3][1], 'wiki/index.md')}) (see also above)")
        parts.append("")
    # A curated subset: "## Experiments (19)" lists 19 of the many experiment pages, and a
    # second section with the same title further down lists 19 others.
    experiments = sorted(r for r, t in w.files.items() if r.startswith("wiki/experiments/") and "\ntype: experiment\n" in t)
    picks = rng.sample(experiments, 38)
    for at, chosen in ((len(parts), picks[19:]), (2, picks[:19])):
        section = ["## Experiments (19)\n", *(f"- [{r.rsplit('/', 1)[1][:-3]}]({_rel(r, 'wiki/index.md')})" for r in chosen), ""]
        parts[at:at] = section
    w.add("wiki/index.md", "\n".join(parts) + "\n")


def _git_env() -> dict:
    import os

    return {**os.environ, "GIT_AUTHOR_NAME": "corpus", "GIT_AUTHOR_EMAIL": "corpus@example.com",
            "GIT_COMMITTER_NAME": "corpus", "GIT_COMMITTER_EMAIL": "corpus@example.com",
            "GIT_AUTHOR_DATE": REAL_COMMIT_DATE, "GIT_COMMITTER_DATE": REAL_COMMIT_DATE}


def _run_git(cwd: Path, *args: str) -> str:
    import subprocess

    out = subprocess.run(["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args], cwd=cwd,
                         env=_git_env(), capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _checked_out_submodule(out: Path, w: _Real) -> None:
    """The one checked-out submodule: its modules, committed; the pin is its head."""
    repo = out / "raw" / "code" / CHECKED_OUT_REPO
    repo.mkdir(parents=True, exist_ok=True)
    for mod in w.modules[CHECKED_OUT_REPO]:
        path = repo / mod
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"x_{i} = {i}\n" for i in range(430)), encoding="utf-8")
    _run_git(repo, "init", "-q")
    _run_git(repo, "add", "-A")
    _run_git(repo, "commit", "-q", "-m", "module sources")
    w.pins[CHECKED_OUT_REPO] = _run_git(repo, "rev-parse", "HEAD")


def generate_real(out: Path, *, seed: int = 0, git: bool = True) -> list[dict]:
    """Write the real-shape corpus under ``out`` (and commit it, submodule gitlinks included);
    return the planted violations (also written to ``out/manifest.json``)."""
    import json
    import shutil

    out = Path(out)
    w = _Real(seed)
    w.silo_pages = {}
    rng = w.rng
    for repo in REPOS:  # modules and pins first: the checked-out submodule's head is a pin
        w.modules[repo] = sorted({f"{rng.choice(CODE_WORDS)}/{rng.choice(CODE_WORDS)}_{i}.py" for i in range(60)})
        w.pins[repo] = _sha(rng)
        w.silo_pages[repo] = [f"wiki/codebases/{repo}/{folder}/{folder[:3]}-{i:03d}.md"
                              for folder, n in SILO_DIRS for i in range(n)]
    if git:
        _checked_out_submodule(out, w)
    for repo in REPOS:
        _silo_pages(w, repo)
        companion = f"wiki/codebases/{repo}.md"
        commit = w.pins[repo]
        if repo in ("optax", "grain"):
            commit = _sha(rng)
            w.plant("CDB001", companion, "companion page commit differs from the pinned submodule commit")
        text = _fm(title=f"{repo} codebase", type="codebase", repo=f"raw/code/{repo}", commit=commit,
                   tags=["codebase", repo], created="2026-04-03", updated="2026-06-20")
        text += (f"# {repo}\n\nHand-written companion of the generated silo. Start at the "
                 f"[overview]({_rel(w.silo_pages[repo][0], companion)}).\n\n{w.words(3)}\n")
        w.add(companion, text, "Codebases", repo, "codebase")
    _local_checkout(w)
    _knowledge(w)
    _hypotheses(w)
    _lanes(w)
    _plant_idle_hypotheses(w)
    _refuted_patterns(w)
    _kernels(w)
    _global_and_index(w)
    w.files[".gitignore"] = f".wiki_cache/\n.bench-corpus\nmanifest.json\nraw/profiles/\nlib/\nraw/code/{LOCAL_REPO}/\n"
    w.files[".gitmodules"] = "".join(
        f'[submodule "raw/code/{repo}"]\n\tpath = raw/code/{repo}\n\turl = https://github.com/example/{repo}.git\n'
        for repo in REPOS
    )
    # the wiki's own configuration says what SCHEMA.md says: stops before the rule are advisory
    w.files["wiki.toml"] = (f'[rules.RUN003]\nsince = "{RULE_ADOPTED.isoformat()}"\n\n'
                            f'[rules.EXP015]\nsince = "{FIRING_RULE_DATE.isoformat()}"\n')
    w.files["SCHEMA.md"] = ("# Schema\n\nSee the conventions: experiment pages, model pages, logs, index.\n\n"
                            "## Stop markers\n\nA stop marker's **Final audit** quotes the auditor's ALL-CLEAR line, "
                            f"for markers written after {RULE_ADOPTED.isoformat()}; earlier ones are advisory.\n\n"
                            "## HLO Dump\n\nA filed page's HLO Dump carries the hypothesis-firing audit line, for "
                            f"pages dated from {FIRING_RULE_DATE.isoformat()}; older pages lack it.\n")
    for rel, text in w.files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for repo in REPOS:
        (out / "raw" / "code" / repo).mkdir(parents=True, exist_ok=True)  # an uninitialised submodule is an empty folder
    for mod in w.modules[LOCAL_REPO]:  # the untracked local checkout the silo pages link into
        path = out / "raw" / "code" / LOCAL_REPO / mod
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"k_{i} = {i}\n" for i in range(430)), encoding="utf-8")
    for folder in w.profiles:  # runs on this machine left their artifacts (gitignored)
        (out / folder).mkdir(parents=True, exist_ok=True)
        (out / folder / "trace.json.gz").write_bytes(b"\x1f\x8b")
    manifest = sorted(w.manifest, key=lambda e: (e["code"], e["path"]))
    (out / "manifest.json").write_text(json.dumps({"seed": seed, "planted": manifest}, indent=1) + "\n", encoding="utf-8")
    if git:
        shutil.rmtree(out / ".git", ignore_errors=True)
        _run_git(out, "init", "-q")
        _run_git(out, "add", "-A", "--", ".", f":!raw/code/{CHECKED_OUT_REPO}")
        for repo in REPOS:
            _run_git(out, "update-index", "--add", "--cacheinfo", f"160000,{w.pins[repo]},raw/code/{repo}")
        _run_git(out, "commit", "-q", "-m", "real-shape corpus")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory to write wiki/ into")
    parser.add_argument("count", type=int, nargs="?", help="number of experiment pages (not with --real-shape)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--broken-fraction", type=float, default=0.0, help="fraction of pages broken on purpose (0-1)")
    parser.add_argument("--real-shape", action="store_true",
                        help="the real-shape corpus (about 4,500 pages, 35 MB, a git repository with submodule gitlinks)")
    args = parser.parse_args(argv)
    if args.real_shape:
        if args.count is not None or args.broken_fraction:
            parser.error("--real-shape takes no count and no --broken-fraction")
        planted = generate_real(args.out, seed=args.seed)
        print(f"wrote the real-shape corpus under {args.out} ({len(planted)} planted violations in manifest.json)")
        return 0
    if args.count is None or args.count < 0 or not 0.0 <= args.broken_fraction <= 1.0:
        parser.error("count must be >= 0 and --broken-fraction within 0..1")
    broken = generate(args.out, args.count, seed=args.seed, broken_fraction=args.broken_fraction)
    print(f"wrote {args.count} experiment pages under {args.out / 'wiki'} ({len(broken)} broken on purpose)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
