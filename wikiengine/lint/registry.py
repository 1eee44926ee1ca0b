"""The registry: every rule, by code, in one table (like ruff's). Rules are imported by name, only when selected."""

from __future__ import annotations

import importlib

from wikiengine.lint.rule import Rule

# code -> "module:Class". Modules are imported only when their rule is selected.
REGISTRY: dict[str, str] = {
    "WK001": "wikiengine.lint.rules.unreadable_page:UnreadablePage",
    "EXP001": "wikiengine.lint.rules.experiment_file_name:ExperimentFileName",
    "EXP002": "wikiengine.lint.rules.experiment_sections:RequiredSections",
    "EXP003": "wikiengine.lint.rules.experiment_sections:HypothesisParagraphs",
    "EXP004": "wikiengine.lint.rules.experiment_sections:ProfileAndHloFilled",
    "EXP005": "wikiengine.lint.rules.experiment_verdict:BackfilledVerdict",
    "EXP006": "wikiengine.lint.rules.experiment_verdict:VerdictSectionAgrees",
    "EXP007": "wikiengine.lint.rules.experiment_immutable:VerdictPageImmutable",
    "EXP008": "wikiengine.lint.rules.experiment_ids:DuplicateExperimentId",
    "EXP009": "wikiengine.lint.rules.experiment_verdict:StatusVerdictConsistent",
    "EXP010": "wikiengine.lint.rules.experiment_variant:VariantInMatrix",
    "EXP011": "wikiengine.lint.rules.experiment_stale:StaleStub",
    "EXP012": "wikiengine.lint.rules.experiment_sections:DuplicateSection",
    "EXP013": "wikiengine.lint.rules.experiment_logged:VerdictLogged",
    "EXP014": "wikiengine.lint.rules.experiment_filed:FiledPageMatchesJournal",
    "EXP015": "wikiengine.lint.rules.experiment_firing:FiringAuditMissing",
    "EXP016": "wikiengine.lint.rules.experiment_variant:VariantMissing",
    "EXP017": "wikiengine.lint.rules.experiment_model:ModelOfAnotherLane",
    "HYP001": "wikiengine.lint.rules.hypothesis_experiments:HypothesisExperimentsExist",
    "HYP002": "wikiengine.lint.rules.hypothesis_variants:HypothesisVariantsAreRows",
    "HYP003": "wikiengine.lint.rules.refuted_patterns:RefutedPatternIdsExist",
    "HYP004": "wikiengine.lint.rules.hypothesis_idle:HypothesisIdle",
    "LOG001": "wikiengine.lint.rules.log_entries:LogEntryHeading",
    "LOG002": "wikiengine.lint.rules.log_entries:LogNewestFirst",
    "LOG003": "wikiengine.lint.rules.log_entries:LoopIterationInGlobalLog",
    "LOG004": "wikiengine.lint.rules.log_entries:UnknownLogOp",
    "LOG005": "wikiengine.lint.rules.log_experiments:LoopIterationNamesPage",
    "MEM001": "wikiengine.lint.rules.memory_ledger:LaunchBooked",
    "MEM002": "wikiengine.lint.rules.memory_ledger:LedgerOnlyGrows",
    "MEM003": "wikiengine.lint.rules.memory_state:StateValid",
    "MEM004": "wikiengine.lint.rules.memory_errors:ErrorsEvidenceFenced",
    "MEM005": "wikiengine.lint.rules.memory_format:MemoryFileFormat",
    "MOD001": "wikiengine.lint.rules.model_page:CurrentBestExists",
    "MOD002": "wikiengine.lint.rules.model_page:CurrentBestIsBest",
    "MOD003": "wikiengine.lint.rules.model_page:ModelPageSections",
    "MOD004": "wikiengine.lint.rules.model_page_updated:ModelPageUpdated",
    "RUN001": "wikiengine.lint.rules.run_retrospective:StopNeedsRetrospective",
    "RUN002": "wikiengine.lint.rules.run_retrospective:RetrospectiveNamesLane",
    "RUN003": "wikiengine.lint.rules.lane_stop:StopHasFinalAudit",
    "RUN004": "wikiengine.lint.rules.lane_stop:IterationAfterStop",
    "WKL001": "wikiengine.lint.rules.workload_name:WorkloadName",
    "WK002": "wikiengine.lint.rules.frontmatter_schema:FrontmatterSchema",
    "WK003": "wikiengine.lint.rules.portable_path:PortablePath",
    "WK100": "wikiengine.lint.rules.unused_suppression:UnusedSuppression",
    "WK101": "wikiengine.lint.rules.unused_suppression:StaleBaselineEntry",
    "PRG001": "wikiengine.lint.rules.duplicate_program_section:DuplicateProgramSection",
    "PRG002": "wikiengine.lint.rules.program_config_schema:ProgramConfigSchema",
    "PRG003": "wikiengine.lint.rules.cascade_shadowing:AdditiveTitleCollision",
    "PRG004": "wikiengine.lint.rules.cascade_shadowing:LeadingTitleShadow",
    "LNK001": "wikiengine.lint.rules.broken_link:BrokenLink",
    "LNK002": "wikiengine.lint.rules.broken_link:IgnoredLinkTarget",
    "IDX002": "wikiengine.lint.rules.orphan_page:OrphanPage",
    "CON001": "wikiengine.lint.rules.contradiction:UnresolvedContradiction",
    "CON002": "wikiengine.lint.rules.contradiction:UnresolvedWarning",
    "IDX001": "wikiengine.lint.rules.index_counts:IndexSectionCount",
    "CDB001": "wikiengine.lint.rules.codebase_commit:CodebaseCommitPinned",
    "LAY001": "wikiengine.lint.rules.wiki_layout:ModelFolderName",
    "LAY002": "wikiengine.lint.rules.wiki_layout:RootProgramMissing",
    "LAY003": "wikiengine.lint.rules.wiki_layout:LaneLogMissing",
    "KRN001": "wikiengine.lint.rules.kernel_verdict:SupportedNeedsVerifier",
    "KRN002": "wikiengine.lint.rules.kernel_verdict:LedgerIsTable",
    "KRN003": "wikiengine.lint.rules.kernel_history:LedgerMatchesBranch",
    "KRN004": "wikiengine.lint.rules.kernel_history:StubBeforeVerdict",
    "KRN005": "wikiengine.lint.rules.kernel_receipt_valid:ReceiptValid",
    "KRN006": "wikiengine.lint.rules.kernel_family_page:FamilyCurrentBestSupported",
    "KRN007": "wikiengine.lint.rules.kernel_family_page:LeadsOnFamilyPage",
}


def rule_class(code: str) -> type[Rule]:
    module, _, name = REGISTRY[code].partition(":")
    return getattr(importlib.import_module(module), name)


def selected_codes(config) -> list[str]:
    """The codes of every enabled rule, in order."""
    return [code for code in sorted(REGISTRY) if config.enabled(code)]


def selected_rules(config, kinds: set[str] | None = None) -> list[Rule]:
    """Instances of every enabled rule, in code order; with ``kinds`` (a PATH run's targets'),
    only of those that can apply to pages of those kinds: the others are not imported."""
    codes = selected_codes(config)
    if kinds is not None:
        from wikiengine.lint.scopes import applies, scope

        codes = [code for code in codes if applies(scope(code), kinds)]
    return [rule_class(code)() for code in codes]
