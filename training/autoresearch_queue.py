"""The scripted proposal queue of ``wiki demo autoresearch``: the agent's hypotheses, as data.

Each :class:`Proposal` is what ``/formulate-hypothesis`` would return for the target of
:mod:`wikiengine.training.autoresearch_target`: a slug, the four labelled paragraphs of the page's
``## Hypothesis under test``, the knobs it changes (merged onto the current frontier's
config: :meth:`Proposal.config`), the verdict the scripted agent asks for, and the verdict
the lane must file once its caps apply (a crash or a parity failure is ``invalid``, a
change within the noise band or with the frontier's op digest is ``inconclusive``).

The queue holds, in dispatch order: a real win, a loss, a change within noise, a crash, a
numerics break, a silent no-op and a second win that only wins once the first is in the
frontier (its ``after``: a scripted agent proposes it only then). Which frontier an entry meets depends on
when the lane files the wins before it; each entry's load-independent claim (it crashes,
it fails parity, it keeps the frontier's op digest, or it changes the digest and passes
parity) holds against every frontier the other wins can make (the tests check it), and
``benchmarks/bench_autoresearch_queue.py`` measures where its throughput lands.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wikiengine.training.autoresearch_knobs import TargetConfig

VERDICTS = ("supported", "refuted", "inconclusive", "invalid")
OUTCOMES = ("win", "loss", "within-noise", "crash", "numerics-break", "silent-no-op")

BASELINE_CONFIG: dict = TargetConfig().as_dict()


@dataclass(frozen=True)
class Proposal:
    """One scripted hypothesis and what the lane should make of it."""

    slug: str
    hypothesis: str
    mechanism: str
    predicted_signal: str
    falsification_criterion: str
    change: dict = field(default_factory=dict)
    requested_verdict: str = "supported"  # what the scripted agent asks for
    expected_verdict: str = "supported"  # what the lane files after its caps
    outcome: str = "win"  # the kind of result this entry demonstrates (one of OUTCOMES)
    after: tuple[str, ...] = ()  # slugs that must be filed (and in the frontier) before this is proposed

    def config(self, frontier: dict) -> dict:
        """The candidate's knobs: the frontier's with this proposal's change applied."""
        return {**frontier, **self.change}

    def hypothesis_section(self) -> str:
        """The body of ``## Hypothesis under test``: the four bold-labelled paragraphs."""
        return "\n\n".join([f"**Hypothesis**: {self.hypothesis}", f"**Mechanism**: {self.mechanism}",
                            f"**Predicted signal**: {self.predicted_signal}",
                            f"**Falsification criterion**: {self.falsification_criterion}"]) + "\n"


QUEUE: tuple[Proposal, ...] = (
    Proposal(
        slug="batch256",
        hypothesis="Raising the batch from 64 to 256 samples raises training throughput by at least 30%, "
                   "because the per-step cost of the optimizer and of Python dispatch is paid once "
                   "for four times the samples.",
        mechanism="Set the knob batch to 256; the three addmm calls of the forward pass and the mm calls "
                  "of the backward pass get four times the rows, while AdamW still updates the same six "
                  "parameter tensors once per step.",
        predicted_signal="Expect the op dump to show the same op names with 256-row shapes, and the "
                         "profile's aten::mm and aten::addmm to take a larger share of self time while "
                         "the optimizer ops (lerp_, addcdiv_, sqrt) keep their absolute cost.",
        falsification_criterion="Refuted if the candidate's tps is not above the frontier's by "
                                "more than the noise band, or if the parity check fails.",
        change={"batch": 256},
        requested_verdict="supported", expected_verdict="supported", outcome="win",
    ),
    Proposal(
        slug="microbatch16",
        hypothesis="Splitting each step into micro-batches of 16 samples raises throughput, because "
                   "a 16-row activation tile stays in the L2 cache and the matmuls run closer to peak.",
        mechanism="Set micro_batch to 16: the step accumulates gradients over batch/16 forward and "
                  "backward passes before one optimizer step; the math of the step is unchanged.",
        predicted_signal="Expect the op dump to show every forward and backward op repeated batch/16 "
                         "times with 16-row shapes, and the profile's per-call aten::addmm time to drop "
                         "by more than the call count rises.",
        falsification_criterion="Refuted if tps falls below the frontier's by more than the noise "
                                "band; inconclusive if the difference stays inside it.",
        change={"micro_batch": 16},
        requested_verdict="refuted", expected_verdict="refuted", outcome="loss",
    ),
    Proposal(
        slug="adamw-foreach",
        hypothesis="The foreach implementation of AdamW raises throughput measurably, because it "
                   "updates all parameters with a handful of multi-tensor kernels instead of a Python "
                   "loop over them.",
        mechanism="Set adamw to foreach, which constructs torch.optim.AdamW(foreach=True); the update "
                  "rule and its hyperparameters stay the same.",
        predicted_signal="Expect the op dump to replace the per-parameter aten::lerp_, aten::addcdiv_ and "
                         "aten::sqrt calls with aten::_foreach_* ops, and the profile's optimizer self "
                         "time to shrink while matmul time is unchanged.",
        falsification_criterion="Refuted if tps is below the frontier's by more than the noise "
                                "band; inconclusive if the gain stays inside the noise band, since the "
                                "optimizer is a small share of a step.",
        change={"adamw": "foreach"},
        requested_verdict="supported", expected_verdict="inconclusive", outcome="within-noise",
    ),
    Proposal(
        slug="microbatch48",
        hypothesis="Micro-batches of 48 samples balance cache reuse against per-pass overhead better "
                   "than either the full batch or 16-sample passes, and raise throughput.",
        mechanism="Set micro_batch to 48, so the step reshapes its batch into passes of 48 rows before "
                  "accumulating gradients.",
        predicted_signal="Expect the forward and backward ops to repeat once per 48-row pass, with "
                         "48-row shapes in the op dump and a per-call matmul time between the two "
                         "neighbouring settings.",
        falsification_criterion="Refuted if tps is below the frontier's by more than the noise "
                                "band; invalid if the step does not run, since the batch must be a "
                                "multiple of 48 for the reshape.",
        change={"micro_batch": 48},
        requested_verdict="refuted", expected_verdict="invalid", outcome="crash",
    ),
    Proposal(
        slug="fast-xent",
        hypothesis="Approximating the cross-entropy's logsumexp by the largest logit speeds up the "
                   "step without changing what it learns, since the largest term dominates the sum.",
        mechanism="Set logsumexp to max: the loss becomes max(logits) minus the target logit, which "
                  "skips the exp, sum and log of the softmax and its backward.",
        predicted_signal="Expect aten::_log_softmax and aten::_log_softmax_backward_data to disappear "
                         "from the op dump in favour of aten::max and aten::gather, and the loss to "
                         "stay within the parity tolerance of the float64 reference.",
        falsification_criterion="Invalid if the parity check fails (relative error above the tolerance "
                                "against the float64 reference); refuted if tps does not rise "
                                "beyond the noise band.",
        change={"logsumexp": "max"},
        requested_verdict="supported", expected_verdict="invalid", outcome="numerics-break",
    ),
    Proposal(
        slug="pin-memory",
        hypothesis="Pinning the host batches before they are used removes a staging copy and raises "
                   "throughput.",
        mechanism="Set pin_memory to true; the data path calls Tensor.pin_memory() on each batch "
                  "before the step reads it.",
        predicted_signal="Expect the op dump to gain an aten::_pin_memory (or aten::is_pinned) call per "
                         "batch and the profile's aten::copy_ self time to drop.",
        falsification_criterion="Refuted if tps is below the frontier's by more than the noise "
                                "band; a silent no-op, hence inconclusive, if the op digest equals the "
                                "frontier's.",
        change={"pin_memory": True},
        requested_verdict="supported", expected_verdict="inconclusive", outcome="silent-no-op",
    ),
    Proposal(
        slug="bf16-autocast",
        hypothesis="Now that the batch is 256, running the matmuls in bfloat16 under autocast raises "
                   "throughput by at least 20% on this CPU, whose AMX tiles multiply bfloat16 at several "
                   "times the float32 rate, while float32 master weights keep the numerics in tolerance.",
        mechanism="Set dtype to bfloat16: forward and backward run inside torch.autocast('cpu', "
                  "dtype=torch.bfloat16), which casts the addmm inputs to bfloat16; AdamW still "
                  "updates float32 weights.",
        predicted_signal="Expect the op dump to show aten::addmm and aten::mm on bfloat16 inputs with "
                         "aten::_to_copy casts around them, and the profile's matmul self time to drop "
                         "by more than the casts add.",
        falsification_criterion="Refuted if tps is not above the frontier's by more than the "
                                "noise band; invalid if the parity check against float64 fails.",
        change={"dtype": "bfloat16"},
        requested_verdict="supported", expected_verdict="supported", outcome="win",
        # at batch 64 the casts eat the AMX gain (measured +0% to +14%); at 256 it is +43% to +73%
        after=("batch256",),
    ),
)


def baseline_config() -> dict:
    """The frontier a fresh lane starts from (a copy: callers may change it)."""
    return dict(BASELINE_CONFIG)
