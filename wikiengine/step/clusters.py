"""Which clusters a lane may use: whose workloads are mine, and the candidate cluster files of
one TPU shape (seed Steps 4-6). ``wiki clusters`` and ``wiki loop start --backend gke`` share it."""

from __future__ import annotations

from pathlib import Path


def lane_owner(root: Path | None, model: str | None, lane: str | None, user_prefix: str | None = None):
    """Whose workloads count as mine: (USER_PREFIX, model, lane), and where the prefix came from."""
    from wikiengine.core import identity
    from wikiengine.core.errors import WikiError
    from wikiengine.executors.gke.occupancy import Me
    from wikiengine.model import targets

    if not model or not lane:
        raise WikiError("name the MODEL and LANE whose workloads count as mine (or use --list)")
    if not identity.NAME_RE.fullmatch(lane):
        raise WikiError(f"lane {lane!r} is not a valid name part ([a-z][-a-z0-9]*)")
    model_name = identity.model_name(model)
    if user_prefix:
        if not identity.NAME_RE.fullmatch(user_prefix):
            raise WikiError(f"USER_PREFIX {user_prefix!r} is not a valid name part ([a-z][-a-z0-9]*)")
        return Me(user_prefix, model_name, lane), "--user-prefix"
    text = program_path = None
    if root is not None:
        folder = (
            model if model.endswith(identity.MODEL_DIR_SUFFIX) else model + identity.MODEL_DIR_SUFFIX
        )
        candidate = root / targets.area_named("experiments").path / folder / "program.md"
        if candidate.is_file():
            text, program_path = candidate.read_text(encoding="utf-8", errors="replace"), candidate
    prefix = identity.resolve_user_prefix(text, cwd=root, program_path=program_path)
    return Me(prefix.value, model_name, lane), prefix.source


def candidate_clusters(env_dir: Path, tpu: str | None, topology: str | None):
    """The cluster files of ``env_dir`` of the one TPU shape asked for (or the only one there)."""
    from wikiengine.core.errors import WikiError
    from wikiengine.executors.gke.clusters import discover_clusters, shapes

    everything = discover_clusters(env_dir)
    if not everything:
        raise WikiError("no cluster files (gke-*.md or pages with a Topology section)", env_dir)
    chosen = discover_clusters(env_dir, tpu, topology)
    available = ", ".join(s.label() for s in shapes(everything))
    if not chosen:
        wanted = " ".join(filter(None, (tpu, topology)))
        raise WikiError(f"no {wanted} clusters in {env_dir}; available: {available}")
    if len(shapes(chosen)) > 1:
        raise WikiError(
            f"several TPU shapes in {env_dir} ({', '.join(s.label() for s in shapes(chosen))}): pick one with --tpu and --topology"
        )
    return chosen
