"""`wiki kernel start|stub|cand|verify|file|rule-out|watch|status|close`: a kernel family's fast path."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from wikiengine._cli._verbs import add_verb_parser, add_writer_options, print_result, verb_root
from wikiengine.core.errors import ExitCode

HELP = "run a kernel family: start, stub, candidates, verify, file, close and what comes next"
DESCRIPTION = """\
A kernel family lives in wiki/kernel_experiments/<family>/pallas/ with its family page
wiki/kernels/<family>.md. Every write takes the family's lock, re-lints what it wrote and
commits; candidates are committed on the experiment's branch kernel/<family>-v<NNN>.

  wiki kernel start PATH|FAMILY [--chip N | --pod [NAME] ...] [--reference FILE --op-point P]
      derive the family slug, bootstrap a new family, record the run target once,
      delete a leftover .stop-authorized, write the start marker, and point
      memory/STATE.md at the session (mode: kernel), so that `wiki step` drives it:
      each wake verifies a candidate that has no receipt and says what is owed.
      With --pod the session's pod is brought up first (or attached to, idempotent by name).
  wiki kernel pod discover [--context C]
      the TPU capacity the cluster reports: nodepool, accelerator, topology,
      machine type, chips (never assumed).
  wiki kernel pod down FAMILY
      delete the pod of the family's latest pod session (close and --pause do it too).
  wiki kernel stub FAMILY --slug S --proposal FILE --op-point P --lever L --plan TEXT ...
      K3: one page per mechanism, committed before any candidate; the variant's
      hardware token comes from a device query.
  wiki kernel cand FAMILY N --note TEXT --source FILE [--mechanism TEXT]
      K4: one commit on the branch (created lazily from the integration branch) and its
      ledger row, with a quick measurement.
  wiki kernel verify FAMILY [--cand candN] [--mode full|quick]
      K6: the verifier in a fresh process; a self-hashed receipt.
  wiki kernel file FAMILY --verdict V [--lead SLUG=WHY ...]
      K7 and K8: the verdict capped by the receipt and the ledger; the family page.
  wiki kernel rule-out FAMILY LEVER --reason TEXT
      record on the family page that a class-page lever cannot apply, on mechanism.
  wiki kernel watch FAMILY [--once] [--interval S]
      the watcher's delta audit since .audit-cursor (lint, stale stubs, thrashing, the
      stop-at-first-win stall), each finding with its correction; exit 1 on findings.
  wiki kernel status FAMILY
      the open stub, the state after the last verdict (the next stub, the stop
      chain, a pause, or the stop-at-first-win stall) and the stop rule's reasons.
  wiki kernel close FAMILY [--pause]
      the stop rule from facts (exit 3 when refused); --pause records the resume action;
      both mark the session in memory/STATE.md (stopped, paused).

The embedded verifier runs on the CPU (parity against a float64 oracle, a firing audit
from a dispatch trace, interleaved p50s). kgate (the TPU verifier) is not installed
here. On a pod session (the `gke` extra; the cluster from $KUBECONFIG) stub's device
query, cand's quick measurement and verify run the same verifier on the pod through
the Kubernetes exec API, after sending it the hashed reference, candidate and verifier
bytes; the receipt is sealed here. Exit 2 on bad input or a pod failure (pending past
its deadline, evicted, past its TTL), 69 when the cluster's API cannot be reached, 3 on
a refused close, 9 when a close or pause is committed but its pod's teardown failed.
"""


def add_parser(subparsers) -> None:
    parser, verbs = add_verb_parser(subparsers, "kernel", HELP, DESCRIPTION)
    for add_verb in (_add_start, _add_stub, _add_cand, _add_verify, _add_file, _add_rule_out, _add_watch, _add_status,
                     _add_pod, _add_close):
        add_verb(verbs)
    parser.set_defaults(handler=run, parser=parser)


def _family_verb(verbs, name: str, help: str):
    """A verb on one family: its parser, with the FAMILY positional first."""
    sub = verbs.add_parser(name, help=help)
    sub.add_argument("family", metavar="FAMILY", help="the kernel family slug (or a kernel path)")
    return sub


def _add_start(verbs) -> None:
    start = verbs.add_parser("start", help="start a session (bootstrapping a new family)")
    start.add_argument("named", metavar="PATH|FAMILY", help="a kernel or benchmark path, or a family slug")
    start.add_argument("--chip", type=int, help="the local chip (default 0)")
    start.add_argument("--pod", nargs="?", const="", metavar="NAME",
                       help="run on a cluster pod instead of a local chip (default name kernel-<family>-s<N>)")
    start.add_argument("--accelerator", help="the pod's accelerator label (from `wiki kernel pod discover`)")
    start.add_argument("--topology", help="the pod's topology label (from `wiki kernel pod discover`)")
    start.add_argument("--chips", type=int, help="the pod's google.com/tpu limit (default: a node's allocatable)")
    start.add_argument("--hours", type=float, default=8.0, help="the pod's hard TTL (activeDeadlineSeconds, default 8)")
    start.add_argument("--artifacts", help="gs:// prefix for a pod's artifacts (anything else is refused)")
    start.add_argument("--image", help="the pod's image (the TPU stack and a python3 for the verifier)")
    start.add_argument("--context", help="the kubeconfig context of the cluster (default: the current one)")
    start.add_argument("--namespace", default="default", help="the pod's namespace (default: default)")
    start.add_argument("--reference", type=Path, help="bootstrap: the reference module to pin")
    start.add_argument("--op-point", action="append", default=[], help="bootstrap: an op-point of the reference")
    start.add_argument("--class-page", help="bootstrap: the class page listing '## Levers (verified)'")
    start.add_argument("--bar", type=float, default=1.05, help="bootstrap: the family's default speedup bar")
    start.add_argument("--first-pick", help="the start marker's first-pick hypothesis")
    start.add_argument("--yes", action="store_true", help="take the local default without asking")
    add_writer_options(start)


def _add_stub(verbs) -> None:
    stub = _family_verb(verbs, "stub", "K3: the stub of one mechanism")
    stub.add_argument("--slug", required=True, help="the page slug: lower-case words joined by '-'")
    stub.add_argument("--proposal", required=True, type=Path, help="markdown with the four labelled paragraphs")
    stub.add_argument("--op-point", required=True, help="the op-point the mechanism targets (one of the binding's)")
    stub.add_argument("--lever", required=True, help="the class-page lever this mechanism tries")
    stub.add_argument("--lever-queue", action="append", default=[], help="the lever queue (repeatable, in order)")
    stub.add_argument("--plan", action="append", default=[], help="a Candidate plan item (repeatable)")
    stub.add_argument("--intervention-class", required=True, help="the class of change, as the class page names it")
    stub.add_argument("--category", required=True, help="the mechanism's category, as the class page names it")
    stub.add_argument("--activity", default="capability-eval", help="optimization | capability-eval")
    stub.add_argument("--profile", help="optimization: the model-lane experiment page that profiled the op-point")
    stub.add_argument("--bar", type=float, help="the pre-registered speedup bar (default: the binding's)")
    add_writer_options(stub)


def _add_cand(verbs) -> None:
    cand = _family_verb(verbs, "cand", "K4: commit one candidate and its ledger row")
    cand.add_argument("number", type=int, metavar="N")
    cand.add_argument("--note", required=True, help="what this candidate changes")
    cand.add_argument("--source", required=True, type=Path, help="the candidate module")
    cand.add_argument("--mechanism", help="the candidate's mechanism (refused when it is not the page's)")
    cand.add_argument("--vid", help="the experiment (default: the family's open stub)")
    add_writer_options(cand)


def _add_verify(verbs) -> None:
    verify = _family_verb(verbs, "verify", "K6: verify a candidate in a fresh process; write its receipt")
    verify.add_argument("--cand", dest="cand_name", help="the ledger row (default: the last)")
    verify.add_argument("--mode", choices=("full", "quick"), default="full",
                        help="the repetitions per timing: full (61) or quick (15)")
    verify.add_argument("--vid", help="the experiment (default: the family's open stub)")
    add_writer_options(verify)


def _add_file(verbs) -> None:
    filed = _family_verb(verbs, "file", "K7/K8: file the verdict and update the family page")
    filed.add_argument("--verdict", required=True, help="supported | refuted | inconclusive | invalid")
    filed.add_argument("--reason", help="why this verdict, in one line")
    filed.add_argument("--lead", action="append", default=[], metavar="SLUG=WHY", help="a lead for the family page")
    filed.add_argument("--vid", help="the experiment (default: the family's open stub)")
    add_writer_options(filed)


def _add_rule_out(verbs) -> None:
    ruled = _family_verb(verbs, "rule-out", "record that a class-page lever cannot apply, on mechanism")
    ruled.add_argument("lever", metavar="LEVER")
    ruled.add_argument("--reason", required=True, help="why the lever cannot apply, on mechanism")
    add_writer_options(ruled)


def _add_watch(verbs) -> None:
    watch = _family_verb(verbs, "watch", "the watcher's delta audit of the family since .audit-cursor")
    watch.add_argument("--once", action="store_true", help="audit once and exit")
    watch.add_argument("--interval", type=float, default=600.0, metavar="S", help="seconds between audits (default 600)")
    watch.add_argument("--stall-minutes", type=float, default=30.0, metavar="M",
                       help="a verdict with no next stub nor stop for M minutes is the stall (default 30)")
    add_writer_options(watch)


def _add_status(verbs) -> None:
    add_writer_options(_family_verb(verbs, "status", "the family's state, its stall if any, and the stop rule"))


def _add_pod(verbs) -> None:
    pod = verbs.add_parser("pod", help="the session's cluster pod: discover capacity, tear it down",
                           description="discover: the TPU nodepools the cluster reports (from $KUBECONFIG). "
                                       "down: delete the pod of the family's latest pod session (a pod already "
                                       "gone is fine).")
    pod_verbs = pod.add_subparsers(dest="pod_verb", metavar="VERB")
    discover = pod_verbs.add_parser("discover", help="the TPU capacity present: nodepool, accelerator, topology, "
                                                     "machine type, chips")
    discover.add_argument("--context", help="the kubeconfig context (default: the current one)")
    discover.add_argument("--json", action="store_true", help="print one JSON object")
    add_writer_options(_family_verb(pod_verbs, "down", "delete the family session's pod"))
    pod.set_defaults(pod_parser=pod)


def _add_close(verbs) -> None:
    close = _family_verb(verbs, "close", "the gated close (the stop rule from facts), or --pause")
    close.add_argument("--pause", action="store_true", help="pause: a retrospective with the rank-1 resume action")
    add_writer_options(close)


def _leads(pairs: list[str]) -> dict[str, str]:
    import re

    from wikiengine.core.errors import WikiError

    leads = {}
    for pair in pairs:
        slug, eq, why = pair.partition("=")
        if not eq or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", slug.strip()) or not why.strip():
            raise WikiError(f"--lead {pair!r} is not SLUG=WHY")
        leads[slug.strip()] = " ".join(why.split())
    return leads


def _watch(root: Path, family, args) -> int:
    import time

    from wikiengine.core.errors import WikiError
    from wikiengine.step.audit import write_cursor
    from wikiengine.step.kernel.audit import run_family_audit

    if args.interval <= 0:
        raise WikiError("--interval must be positive")
    while True:
        audit = run_family_audit(root, family, stall_minutes=args.stall_minutes)
        if not args.dry_run:
            write_cursor(root, family, audit.wiki_sha, audit.code_sha)
        doc = audit.as_json()
        if args.json:
            print(json.dumps(doc, indent=2), flush=True)
        else:
            lines = [f"audit of {family.slug} ({'full' if doc['full'] else 'since ' + doc['since'][:12]}): "
                     + ("clean" if doc["clean"] else f"{len(doc['findings'])} finding(s)")]
            lines += [f"{f['path']}:{f['line']}: {f['check']} {f['message']}\n    fix: {f['correction']}"
                      for f in doc["findings"]]
            print("\n".join(lines + ([doc["all_clear"]] if doc["clean"] else [])), flush=True)
        if args.once:
            return ExitCode.FINDINGS if audit.findings else ExitCode.OK
        time.sleep(args.interval)


def _pod(args) -> int:
    from wikiengine.model.kernels import KernelFamily, derive_slug
    from wikiengine.model.targets import repository_root
    from wikiengine.step.kernel import run as kernel_run

    if args.pod_verb == "discover":
        from wikiengine.executors.gke.kernel_pod import discover, resolve_context

        context = resolve_context(args.context)
        pools = [p.as_json() for p in discover(context)]
        result = {"context": context, "nodepools": pools}
        text = f"{context}: " + (f"{len(pools)} TPU nodepool(s)\n" if pools else "no TPU nodes\n") + "".join(
            f"  {p['nodepool']}  {p['accelerator']}  {p['topology']}  {p['machine_type']}  "
            f"{p['nodes']} node(s) x {p['chips_per_node']} chips\n" for p in pools)
    elif args.pod_verb == "down":
        root = repository_root(args.root)
        result = kernel_run.pod_down(root, KernelFamily(derive_slug(root, args.family)), dry_run=args.dry_run)
        text = (f"dry run: would delete pod {result['pod']}\n" if args.dry_run
                else f"pod {result['pod']}: {'deleted' if result['deleted'] else 'already gone'}\n")
    else:
        args.pod_parser.print_help()
        return 2
    print_result(args, result, text)
    return 0


def run(args) -> int:
    from wikiengine.model.kernels import KernelFamily, derive_slug
    from wikiengine.step.kernel import close as kernel_close
    from wikiengine.step.kernel import writers as kernel_writers

    if args.verb == "pod":
        return _pod(args)
    root = verb_root(args)
    if root is None:
        return 2
    if args.verb == "start":
        result = kernel_writers.start(
            root, args.named, chip=args.chip, pod=args.pod, accelerator=args.accelerator, topology=args.topology,
            chips=args.chips, hours=args.hours, artifacts=args.artifacts, image=args.image, context=args.context,
            namespace=args.namespace, reference=args.reference,
            op_points=args.op_point, class_page=args.class_page, bar=args.bar, first_pick=args.first_pick,
            dry_run=args.dry_run)
        text = (f"{result['family']}: session {result['session']} on {result['run_target']}"
                + (" (attached to its pod)" if result.get("attached") else "") + "\n"
                + (f"  {result['memory_state']}\n" if result.get("memory_state") else ""))
    else:
        family = KernelFamily(derive_slug(root, args.family))
        if args.verb == "stub":
            result = kernel_writers.stub(
                root, family, slug=args.slug, proposal_path=args.proposal, op_point=args.op_point, lever=args.lever,
                levers=args.lever_queue, plan_items=args.plan, intervention_class=args.intervention_class,
                category=args.category, activity=args.activity, profile=args.profile, bar=args.bar, dry_run=args.dry_run)
            text = f"{result['vid']}: stub {result.get('page')} on {result['variant']}\n"
        elif args.verb == "cand":
            result = kernel_writers.cand(root, family, args.number, note=args.note, source=args.source,
                                         mechanism=args.mechanism, vid=args.vid, dry_run=args.dry_run)
            text = f"{result['vid']} {result['cand']} on {result['branch']}\n" + (
                f"  {result['subject']}\n" if "subject" in result else "")
        elif args.verb == "verify":
            result = kernel_writers.verify(root, family, vid=args.vid, cand_name=args.cand_name, mode=args.mode,
                                           dry_run=args.dry_run)
            text = f"{result['vid']} {result['cand']}: {result.get('verdict', 'would verify')} {result.get('receipt', '')}\n" + "".join(
                f"  {r}\n" for r in result.get("reasons", []))
        elif args.verb == "file":
            result = kernel_writers.file_verdict(root, family, verdict=args.verdict, reason=args.reason, vid=args.vid,
                                                 leads=_leads(args.lead), dry_run=args.dry_run)
            text = f"{result['vid']}: filed {result['verdict']}\n" + "".join(f"  {c}\n" for c in result["capped"])
        elif args.verb == "rule-out":
            result = kernel_writers.rule_out(root, family, args.lever, reason=args.reason, dry_run=args.dry_run)
            text = f"{result['family']}: lever {result['lever']} ruled out ({result['reason']})\n"
        elif args.verb == "watch":
            return _watch(root, family, args)
        elif args.verb == "status":
            result = kernel_close.status(root, family)
            text = (f"{result['family']}: session {result['session']}, open {', '.join(result['open']) or 'none'}, "
                    f"frontier {result['frontier'] or 'none'}\nnext: {result['k9'].get('message', result['k9']['state'])}\n"
                    f"resume: {result['resume_action']}\n" + "".join(f"  stop rule: {r}\n" for r in result["stop_rule"]))
        else:
            result = kernel_close.close(root, family, pause=args.pause, dry_run=args.dry_run)
            text = (f"paused; resume: {result['resume_action']}\n" if result.get("paused")
                    else f"{'stopped' if result.get('stopped') else 'would stop'}: {result.get('final_audit', '')}\n"
                    + result["evidence"] + result["levers"])
    print_result(args, result, text, dry_run=args.dry_run)
    teardown = result.get("pod_teardown") or {}
    if teardown.get("error"):  # the close or pause is committed; the pod is not gone: say so, loudly
        print(f"error: {teardown['error']}; the pod still runs until its TTL: `wiki kernel pod down "
              f"{result['family']}`", file=sys.stderr)
        return ExitCode.INCOMPLETE
    return 0
