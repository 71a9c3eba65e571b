"""The operation rule engine: settings.json rules and sources.json narrowing decide whether
an agent's shell, file or network operation is allowed, denied, or asked of a human.

Pure Python (no Django). See docs/rules.md.
"""

from rules.effects import egress_ceiling
from rules.engine import evaluate, propose_allow_rule, rule_matches
from rules.model import (
    Decision,
    Direction,
    Evaluation,
    FileAction,
    FileOperation,
    Kind,
    NetworkOperation,
    Operation,
    OperationError,
    Part,
    Rule,
    RuleSet,
    RuleSyntaxError,
    ShellOperation,
    SourcesError,
    operation_from_dict,
)
from rules.settings import parse_rule, parse_settings
from rules.sources import Sources, parse_sources

__all__ = [
    "Decision",
    "Direction",
    "Evaluation",
    "FileAction",
    "FileOperation",
    "Kind",
    "NetworkOperation",
    "Operation",
    "OperationError",
    "Part",
    "Rule",
    "RuleSet",
    "RuleSyntaxError",
    "ShellOperation",
    "Sources",
    "SourcesError",
    "egress_ceiling",
    "evaluate",
    "operation_from_dict",
    "parse_rule",
    "parse_settings",
    "parse_sources",
    "propose_allow_rule",
    "rule_matches",
]
