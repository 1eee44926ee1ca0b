"""Generate a realistic autoresearch wiki for benchmarks and lint tests (deterministic).

    python benchmarks/gen_wiki.py OUT N [--seed S] [--broken-fraction F]

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
    from wikiengine.identity import model_name, workload_name

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
    info = {"status": status, "variant": variant, "mfu": None if in_progress else round(mfu * 100, 1)}
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
        f"## Frontier exp\n\n{frontier}\n"
    )


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
        day = START_DATE
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
                text = break_page(rng, text, defect)
                broken.append((path, defect))
            path.write_text(text, encoding="utf-8")
            stem = name[:-3]
            if in_progress:
                open_count += 1
                log_entries.append(f"## [{day.isoformat()}] run-experiment | {stem[11:]} dispatched\n")
                continue
            variant, mfu = info["variant"], info["mfu"]
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
        (models_dir / f"{model}-{lane}.md").write_text(model_page(model, lane, best, open_count, day), encoding="utf-8")
    global_log.sort(key=lambda entry: entry[4:14])
    (wiki / "log.md").write_text("\n".join(reversed(global_log)), encoding="utf-8")
    manifest = "".join(f"{p.relative_to(out).as_posix()}\t{d}\n" for p, d in broken)
    (Path(out) / "broken.tsv").write_text(manifest, encoding="utf-8")
    return broken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory to write wiki/ into")
    parser.add_argument("count", type=int, help="number of experiment pages")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--broken-fraction", type=float, default=0.0, help="fraction of pages broken on purpose (0-1)")
    args = parser.parse_args(argv)
    if args.count < 0 or not 0.0 <= args.broken_fraction <= 1.0:
        parser.error("count must be >= 0 and --broken-fraction within 0..1")
    broken = generate(args.out, args.count, seed=args.seed, broken_fraction=args.broken_fraction)
    print(f"wrote {args.count} experiment pages under {args.out / 'wiki'} ({len(broken)} broken on purpose)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
