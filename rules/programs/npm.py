"""npm: not modelled as a program (``npm install`` and ``npm run`` run package and project
scripts, so no rule may allow them), but its options that take a value are needed twice:
to find the subcommand behind them (``npm --prefix x install`` is judged as ``npm install``
for deny rules) and for sources.json to find packages and registries."""

from __future__ import annotations

from rules.programs.base import Abbreviations, table, valued

GLOBAL = table(
    valued("--registry --prefix --userconfig --cache --loglevel -w,--workspace"),
    abbreviations=Abbreviations.NONE,
)
