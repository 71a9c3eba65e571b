"""Everyday commands for the rule engine: what agents really type, with the right decision.

Pure data. Every string below is a shell command an agent might send; it is only ever handed,
as a Python string, to ``rules.evaluate``. Never run one — not in a shell, a subprocess, a
container, not even with ``echo``. It lives beside the adversarial corpus
(``adversarial_cases.py``) as its benign counterpart: the adversarial cases say what must never
be allowed, these say what a useful engine must allow — and which ordinary commands a person
must still be asked about, or that stay denied.

Agents and policies. Every agent type uses seed 001's one settings.json
(rules/tests/fixtures/settings.json) and its own sources.json:

* "data": python-data-agent, rules/tests/fixtures/sources.json (pip from PyPI, no npm, git,
  web PyPI and HuggingFace, python and bash);
* "devops": devops-agent, rules/tests/fixtures/sources_devops.json (pip from PyPI, npm from
  registry.npmjs.org, git from GitHub and GitLab, broad web, python, bash and node);
* "research": research-agent, rules/tests/fixtures/sources_research.json (pip from PyPI, no
  npm, git from GitHub only, broad web: arxiv, Semantic Scholar, DOI, Wikipedia, …; python
  and bash).

The context is "ctx-1": the workspace, and the working directory a command starts in, is
/workspace/ctx-1. Files named here (data.csv, analysis.py, k8s/deployment.yaml, …) are the
agent's own files in its workspace.

``expect`` is the right decision under that settings.json and sources.json, evaluated with
the contained allow on (``evaluate(..., contained=True)``: the executor, bubblewrap and
Landlock, holds an explicitly allowed interpreter — python, python3, bash, sh — running code
the engine cannot read, a script, ``-c`` code, ``-m`` module or here-document, to the context
and to the hosts sources.json declares):

* "allow": every program the line runs matches an allow rule ``shell(prefix:*)`` (or is a
  shell builtin or a wrapper such as ``timeout``, ``nohup``, ``xargs``, whose command is
  allowed), no deny rule applies, its reads are not denied, its writes and deletes stay in
  the workspace, and what it contacts is declared by sources.json (pip from PyPI, git clone
  from an allowed remote, a contained run's own network);
* "ask": nothing denies it, but something in it is not allowed — a program outside the
  allow list (rm, tee, du, npm, node, docker, kubectl, jq, …), a git subcommand outside it
  (push, pull, fetch, remote), a program run by its path in the workspace;
* "deny": a deny rule applies (curl, wget, sudo) or the command needs something sources.json
  does not declare for this agent type (a git remote it does not list).

``why`` says, for every entry that is not "allow", why a person must be asked or why it is
denied. It is empty for "allow".

The set is meant to be representative, not balanced: most of a data agent's day is inside
the allow list; devops and research agents reach more often for tools the seed does not
allow.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Everyday:
    agent: str  # "data" | "devops" | "research"
    command: str
    # "allow" | "ask" | "deny": the right decision under seed 001's settings.json and that
    # agent's sources.json, with the contained allow on
    expect: str
    # required (non-empty) when expect != "allow": why a person must be asked / why denied
    why: str = ""


_NOT_ALLOWED = "is not in the seed's allow list"

COMMANDS: tuple[Everyday, ...] = (
    # ============================================================================================
    # python-data-agent
    # ============================================================================================
    # --- looking around ------------------------------------------------------------------------
    Everyday("data", "pwd", "allow"),
    Everyday("data", "ls", "allow"),
    Everyday("data", "ls -la", "allow"),
    Everyday("data", "ls -lh data/", "allow"),
    Everyday("data", "ls -lhS data | head", "allow"),
    Everyday("data", "ls data/*.csv", "allow"),
    Everyday("data", "ls -1 data/raw | wc -l", "allow"),
    Everyday("data", "ls -la | grep csv", "allow"),
    Everyday("data", "pwd && ls", "allow"),
    Everyday("data", "ls /workspace/ctx-1", "allow"),
    Everyday("data", "ls $WORKSPACE/output", "allow"),
    Everyday("data", 'echo "Workspace: $WORKSPACE"', "allow"),
    Everyday("data", "tree -L 2", "allow"),
    Everyday("data", "tree data", "allow"),
    Everyday("data", "tree -L 2 -I '__pycache__|.venv'", "allow"),
    Everyday("data", "cat README.md", "allow"),
    Everyday("data", "cat /etc/os-release", "allow"),
    Everyday("data", "cat requirements.txt", "allow"),
    # --- inspecting data -----------------------------------------------------------------------
    Everyday("data", "head -20 data.csv", "allow"),
    Everyday("data", "head -n 5 data/sales.csv", "allow"),
    Everyday("data", "head -3 *.csv", "allow"),
    Everyday("data", "head -c 500 data/events.jsonl", "allow"),
    Everyday("data", "head -n 1 data/sales.csv | tr ',' '\\n'", "allow"),
    Everyday("data", "head -n 5 data/sales.csv | cut -d, -f1-3", "allow"),
    Everyday("data", "tail -n 20 logs/train.log", "allow"),
    Everyday("data", "tail -n +2 data/sales.csv | sort -t, -k3 -rn | head -5", "allow"),
    Everyday("data", "wc -l data.csv", "allow"),
    Everyday("data", "wc -l data/*.csv", "allow"),
    Everyday("data", "wc -l *.csv", "allow"),
    Everyday("data", "wc -c data/*.parquet", "allow"),
    Everyday("data", "cat data/sales.csv | wc -l", "allow"),
    Everyday("data", "cat /workspace/ctx-1/data/sales.csv | head", "allow"),
    Everyday("data", "grep -c ',NA,' data.csv", "allow"),
    Everyday("data", 'grep -rn "TODO" src/', "allow"),
    Everyday("data", 'grep -n "def " src/*.py', "allow"),
    Everyday("data", 'grep -rn --include="*.py" "import pandas" .', "allow"),
    Everyday("data", "grep -i error logs/*.log | tail -20", "allow"),
    Everyday("data", "grep -m 5 '\"error\"' data/events.jsonl", "allow"),
    Everyday("data", "grep -v '^#' config.ini | sort", "allow"),
    Everyday("data", 'find . -name "*.csv" -type f', "allow"),
    Everyday("data", "find . -type f -mtime -1", "allow"),
    Everyday("data", "find data -name '*.parquet' -size +10M", "allow"),
    Everyday("data", "find . -maxdepth 2 -type d", "allow"),
    Everyday("data", 'find . -type f -name "*.py" | wc -l', "allow"),
    Everyday("data", "find . -name '*.ipynb' -not -path './.venv/*'", "allow"),
    Everyday("data", 'find . -name "*.csv" -exec wc -l {} +', "allow"),
    Everyday("data", "find output -name '*.tmp' -delete", "allow"),
    Everyday("data", "sort data/ids.txt | uniq -c | sort -rn | head", "allow"),
    Everyday("data", "sort -u data/categories.txt > data/categories_unique.txt", "allow"),
    Everyday("data", "sort -t, -k2 -n data.csv | head", "allow"),
    Everyday("data", "uniq -d sorted_ids.txt", "allow"),
    Everyday("data", "awk -F, '{print $3}' data.csv | sort | uniq -c", "allow"),
    Everyday("data", "awk -F, 'NR>1 {s+=$4} END {print s}' data/sales.csv", "allow"),
    Everyday("data", "awk -F, 'NR==1{print NF}' data.csv", "allow"),
    Everyday("data", "awk 'NR % 1000 == 0' data/big.csv > data/sample.csv", "allow"),
    Everyday("data", "sed -n '1,10p' data.csv", "allow"),
    Everyday("data", "sed -n '100,120p' src/pipeline.py", "allow"),
    Everyday("data", "sed -i 's/;/,/g' data/export.csv", "allow"),
    Everyday("data", "sed 's/\\r$//' data/raw.csv > data/clean.csv", "allow"),
    Everyday("data", "cut -d, -f2 data.csv | sort -u | wc -l", "allow"),
    Everyday(
        "data", "cut -d',' -f1 data/sales.csv | sort | uniq -c | sort -rn | head -10", "allow"
    ),
    Everyday("data", "tr ',' '\\t' < data.csv > data.tsv", "allow"),
    Everyday("data", "tr -d '\\r' < data/raw.csv > data/unix.csv", "allow"),
    Everyday("data", "diff old.csv new.csv", "allow"),
    Everyday("data", "diff -u analysis_v1.py analysis.py", "allow"),
    Everyday("data", "diff -r output/run1 output/run2", "allow"),
    Everyday("data", "diff <(head -1 data/a.csv) <(head -1 data/b.csv)", "allow"),
    # --- running its own code ------------------------------------------------------------------
    Everyday("data", "python3 --version", "allow"),
    Everyday("data", "python3 analysis.py", "allow"),
    Everyday(
        "data", "python3 analysis.py --input data/sales.csv --output output/summary.csv", "allow"
    ),
    Everyday("data", "python analysis.py", "allow"),
    Everyday("data", "python3 -m pytest -q", "allow"),
    Everyday("data", "python3 -m pytest tests/test_clean.py::test_dropna -v", "allow"),
    Everyday("data", "python3 -m pytest -q 2>&1 | tail -20", "allow"),
    Everyday("data", "bash run.sh", "allow"),
    Everyday("data", "sh scripts/prepare_data.sh", "allow"),
    Everyday("data", 'python3 -c "import pandas; print(pandas.__version__)"', "allow"),
    Everyday("data", "python3 -c 'import sys; print(sys.version)'", "allow"),
    Everyday(
        "data",
        "python3 -c \"import pandas as pd; df = pd.read_csv('data/sales.csv'); print(df.describe())\"",
        "allow",
    ),
    Everyday("data", 'python3 -c "import torch; print(torch.cuda.is_available())"', "allow"),
    Everyday(
        "data",
        'python3 -c "from huggingface_hub import snapshot_download; '
        "snapshot_download('bert-base-uncased', local_dir='models/bert')\"",
        "allow",
    ),
    Everyday("data", "python3 -m venv .venv", "allow"),
    Everyday("data", "python3 -m json.tool data.json", "allow"),
    Everyday("data", "cat output/metrics.json | python3 -m json.tool", "allow"),
    Everyday("data", "python3 -m jupyter nbconvert --to script notebook.ipynb", "allow"),
    Everyday(
        "data",
        "python3 - <<'EOF'\nimport pandas as pd\nprint(pd.read_csv('data/sales.csv').shape)\nEOF",
        "allow",
    ),
    Everyday("data", "mkdir -p logs && python3 train.py > logs/train.log 2>&1", "allow"),
    Everyday("data", "mkdir -p output/figures && python3 plot.py --out output/figures", "allow"),
    Everyday("data", 'python3 analysis.py && echo "OK" || echo "FAILED"', "allow"),
    Everyday("data", "timeout 300 python3 train.py --epochs 5", "allow"),
    Everyday("data", "nohup python3 train.py > logs/train.log 2>&1 &", "allow"),
    Everyday("data", "PYTHONUNBUFFERED=1 python3 train.py", "allow"),
    Everyday("data", "cd src && python3 -m pytest -q ../tests", "allow"),
    Everyday("data", "cd $WORKSPACE && python3 analysis.py", "allow"),
    Everyday("data", "for i in 1 2 3; do python3 train.py --seed $i; done", "allow"),
    # --- packages ------------------------------------------------------------------------------
    Everyday("data", "pip install pandas==2.2.0", "allow"),
    Everyday("data", "pip install -r requirements.txt", "allow"),
    Everyday("data", 'pip install "scikit-learn>=1.4" matplotlib seaborn', "allow"),
    Everyday("data", "pip install -q pyarrow fastparquet", "allow"),
    Everyday("data", "pip install -U datasets huggingface_hub", "allow"),
    Everyday("data", "pip install --upgrade pip", "allow"),
    Everyday("data", "pip install openpyxl xlrd", "allow"),
    Everyday("data", "python3 -m pip install -r requirements.txt", "allow"),
    Everyday("data", "pip list", "allow"),
    Everyday("data", "pip list | grep -i torch", "allow"),
    Everyday("data", "pip list --outdated", "allow"),
    Everyday("data", "pip list --format=freeze > requirements.lock", "allow"),
    # --- git -----------------------------------------------------------------------------------
    Everyday("data", "git status", "allow"),
    Everyday("data", "git status --short", "allow"),
    Everyday("data", "git log --oneline -5", "allow"),
    Everyday("data", "git log -p -1 -- analysis.py", "allow"),
    Everyday("data", "git diff --stat", "allow"),
    Everyday("data", "git diff --cached", "allow"),
    Everyday("data", "git diff --stat && git status --short", "allow"),
    Everyday("data", "git add -A", "allow"),
    Everyday("data", "git add analysis.py requirements.txt", "allow"),
    Everyday("data", 'git commit -m "Clean sales data: drop duplicates, fix dates"', "allow"),
    Everyday("data", 'git add -A && git commit -m "Add summary statistics"', "allow"),
    Everyday("data", "git checkout -b feature/cleaning", "allow"),
    Everyday("data", "git checkout main", "allow"),
    Everyday("data", "git checkout -- data/config.json", "allow"),
    Everyday("data", "git branch -a", "allow"),
    Everyday("data", "git branch -d feature/old-experiment", "allow"),
    Everyday("data", "git clone https://github.com/pandas-dev/pandas.git", "allow"),
    Everyday(
        "data", "git clone --depth 1 https://github.com/owid/covid-19-data.git data/owid", "allow"
    ),
    # --- files ---------------------------------------------------------------------------------
    Everyday("data", "mkdir -p data/raw data/processed output", "allow"),
    Everyday("data", "cp data/raw/sales.csv data/processed/", "allow"),
    Everyday("data", "cp -r data/raw data/raw_backup", "allow"),
    Everyday("data", "mv output/report.md reports/", "allow"),
    Everyday("data", "mv data/new_sales.csv data/raw/", "allow"),
    Everyday("data", "touch notes.md", "allow"),
    Everyday("data", "touch output/.gitkeep", "allow"),
    Everyday("data", 'echo "pandas==2.2.0" >> requirements.txt', "allow"),
    Everyday("data", 'echo "output/" >> .gitignore', "allow"),
    Everyday("data", "echo '{\"threshold\": 0.5}' > config.json", "allow"),
    Everyday("data", "printf 'a,b\\n1,2\\n' > sample.csv", "allow"),
    Everyday("data", 'printf "%s\\n" "pandas==2.2.0" "numpy==1.26.4" > requirements.txt', "allow"),
    Everyday("data", 'cp output/summary.csv "$WORKSPACE/reports/"', "allow"),
    Everyday("data", 'DATA=data/sales.csv; head -5 "$DATA"', "allow"),
    Everyday("data", 'OUT=results; mkdir -p "$OUT" && cp output/summary.csv "$OUT"/', "allow"),
    Everyday(
        "data",
        "cat > clean.py <<'EOF'\nimport pandas as pd\n\ndf = pd.read_csv('data/sales.csv')\n"
        "df = df.drop_duplicates()\ndf.to_csv('data/processed/sales.csv', index=False)\nEOF",
        "allow",
    ),
    Everyday(
        "data",
        "cat > requirements.txt <<'EOF'\npandas==2.2.0\nnumpy==1.26.4\nmatplotlib\nEOF",
        "allow",
    ),
    Everyday(
        "data",
        "cat <<EOF > config.yaml\ninput: data/sales.csv\noutput: output/\nthreshold: 0.5\nEOF",
        "allow",
    ),
    Everyday("data", 'for f in data/*.csv; do echo "$f: $(wc -l < "$f")"; done', "allow"),
    Everyday(
        "data",
        'for f in data/raw/*.json; do python3 -m json.tool "$f" > /dev/null || echo "bad: $f"; done',
        "allow",
    ),
    Everyday("data", 'while read -r f; do wc -l "$f"; done < filelist.txt', "allow"),
    Everyday("data", "test -f data.csv && echo yes", "allow"),
    Everyday("data", "[ -d output ] || mkdir output", "allow"),
    # --- what the seed does not allow ----------------------------------------------------------
    Everyday(
        "data",
        "rm output/tmp_merge.csv",
        "ask",
        f"rm {_NOT_ALLOWED} (deleting in the workspace "
        "is allowed as a file operation, but the program rm needs a shell allow rule)",
    ),
    Everyday("data", "python3 train.py 2>&1 | tee logs/train.log", "ask", f"tee {_NOT_ALLOWED}"),
    Everyday("data", "du -sh data/*", "ask", f"du {_NOT_ALLOWED}"),
    Everyday("data", "head data.csv | column -t -s,", "ask", f"column {_NOT_ALLOWED}"),
    Everyday(
        "data",
        "git clone https://huggingface.co/datasets/stanfordnlp/imdb data/imdb",
        "deny",
        "the data agent's sources.json lists huggingface.co as a web domain, not as a git "
        "remote: git.allowed_remotes has only https://github.com/* and https://gitlab.com/*",
    ),
    Everyday(
        "data",
        "git push origin feature/cleaning",
        "ask",
        "git push is not in the seed's allow list (only clone, status, log, diff, add, "
        "commit, checkout, branch); publishing work is a person's call",
    ),
    Everyday(
        "data",
        "curl -sSLO https://raw.githubusercontent.com/mwaskom/seaborn-data/master/iris.csv",
        "deny",
        "curl is in the seed's deny list (shell(curl:*)), whatever the host",
    ),
    # ============================================================================================
    # devops-agent
    # ============================================================================================
    Everyday("devops", "ls -la deploy/", "allow"),
    Everyday("devops", "tree -L 3 infra/", "allow"),
    Everyday("devops", "cat package.json", "allow"),
    Everyday("devops", "cat Dockerfile", "allow"),
    Everyday("devops", "cat .gitlab-ci.yml", "allow"),
    Everyday("devops", "head -30 Makefile", "allow"),
    Everyday("devops", "tail -n 50 logs/deploy.log", "allow"),
    Everyday("devops", 'grep -rn "image:" k8s/', "allow"),
    Everyday("devops", 'grep -n "replicas" k8s/deployment.yaml', "allow"),
    Everyday("devops", "grep -E '\"(version|name)\"' package.json", "allow"),
    Everyday("devops", "grep -A3 '\"scripts\"' package.json", "allow"),
    Everyday("devops", "grep -rn --include='*.tf' 'instance_type' infra/", "allow"),
    Everyday("devops", 'find . -name "*.yaml" -o -name "*.yml"', "allow"),
    Everyday("devops", "find k8s -name '*.yaml' | xargs grep -l 'kind: Deployment'", "allow"),
    Everyday("devops", "find . -name node_modules -prune -o -name '*.js' -print | wc -l", "allow"),
    Everyday("devops", "wc -l $(find . -name '*.tf')", "allow"),
    Everyday(
        "devops", "awk -F: '/image:/ {print $2\":\"$3}' docker-compose.yml | sort -u", "allow"
    ),
    Everyday("devops", "cut -d= -f1 .env.example | sort", "allow"),
    Everyday("devops", "sort -u hosts.txt", "allow"),
    Everyday("devops", "diff -u k8s/staging/values.yaml k8s/prod/values.yaml", "allow"),
    Everyday("devops", "diff <(sort requirements.txt) <(sort requirements.lock)", "allow"),
    Everyday("devops", "sed -i 's/replicas: 2/replicas: 3/' k8s/deployment.yaml", "allow"),
    Everyday("devops", 'sed -i \'s/"version": "1.4.1"/"version": "1.4.2"/\' package.json', "allow"),
    Everyday("devops", "ls node_modules/.bin | head", "allow"),
    Everyday("devops", "cat node_modules/express/package.json | grep '\"version\"'", "allow"),
    Everyday("devops", "python3 -m json.tool package.json", "allow"),
    Everyday("devops", "cat package.json | python3 -m json.tool | head -40", "allow"),
    Everyday(
        "devops",
        "python3 -c \"import yaml; print(yaml.safe_load(open('k8s/deployment.yaml'))['spec']['replicas'])\"",
        "allow",
    ),
    Everyday(
        "devops",
        "python3 -c \"import json; print(json.load(open('package.json'))['scripts'])\"",
        "allow",
    ),
    Everyday("devops", "python3 scripts/render_templates.py --env staging", "allow"),
    Everyday("devops", 'for f in k8s/*.yaml; do python3 scripts/validate.py "$f"; done', "allow"),
    Everyday("devops", "python3 -m yamllint k8s/", "allow"),
    Everyday("devops", "bash scripts/lint.sh", "allow"),
    Everyday("devops", "bash -n scripts/deploy.sh", "allow"),
    Everyday("devops", "sh ci/check_versions.sh", "allow"),
    Everyday("devops", "pip install ansible-lint yamllint", "allow"),
    Everyday("devops", "pip install -r requirements-dev.txt", "allow"),
    Everyday("devops", "git status -sb", "allow"),
    Everyday("devops", "git log --oneline --graph -10", "allow"),
    Everyday("devops", "git diff origin/main -- .gitlab-ci.yml", "allow"),
    Everyday("devops", "git branch -vv", "allow"),
    Everyday("devops", "git checkout -b fix/helm-values", "allow"),
    Everyday("devops", 'git add k8s/ && git commit -m "Bump web replicas to 3"', "allow"),
    Everyday(
        "devops", "git clone https://gitlab.com/gitlab-org/gitlab-runner.git --depth 1", "allow"
    ),
    Everyday(
        "devops",
        "git clone https://github.com/kubernetes/examples.git vendor/k8s-examples",
        "allow",
    ),
    Everyday("devops", "mkdir -p .github/workflows", "allow"),
    Everyday(
        "devops",
        "cat > .github/workflows/ci.yml <<'EOF'\nname: ci\non: [push]\njobs:\n  test:\n"
        "    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"
        "      - run: npm ci && npm test\nEOF",
        "allow",
    ),
    Everyday(
        "devops",
        "cat > Dockerfile <<'EOF'\nFROM python:3.11-slim\nWORKDIR /app\nCOPY . .\n"
        'RUN pip install -r requirements.txt\nCMD ["python", "app.py"]\nEOF',
        "allow",
    ),
    Everyday("devops", "cp .env.example .env", "allow"),
    Everyday("devops", "mv docker-compose.yml docker-compose.old.yml", "allow"),
    Everyday("devops", "touch CHANGELOG.md", "allow"),
    Everyday("devops", 'echo "NODE_ENV=production" >> .env', "allow"),
    Everyday("devops", "printf '%s\\n' \"v1.4.2\" > VERSION", "allow"),
    Everyday("devops", "echo $PATH", "allow"),
    # --- what the seed does not allow ----------------------------------------------------------
    Everyday(
        "devops",
        "npm install",
        "ask",
        f"npm {_NOT_ALLOWED} (sources.json declares npm, "
        "which only narrows what an allowed npm may reach)",
    ),
    Everyday("devops", "npm ci", "ask", f"npm {_NOT_ALLOWED}"),
    Everyday(
        "devops", "npm run build", "ask", f"npm {_NOT_ALLOWED}; run executes package.json scripts"
    ),
    Everyday("devops", "npm test", "ask", f"npm {_NOT_ALLOWED}"),
    Everyday(
        "devops",
        "node --version",
        "ask",
        f"node {_NOT_ALLOWED}, though sources.json lists it as a runtime",
    ),
    Everyday(
        "devops",
        "node scripts/build.js",
        "ask",
        f"node {_NOT_ALLOWED}: the contained allow only "
        "covers interpreters the settings allow (python, python3, bash, sh)",
    ),
    Everyday("devops", "npx prettier --check .", "ask", f"npx {_NOT_ALLOWED}"),
    Everyday("devops", "docker build -t web:dev .", "ask", f"docker {_NOT_ALLOWED}"),
    Everyday("devops", "kubectl get pods -n staging", "ask", f"kubectl {_NOT_ALLOWED}"),
    Everyday("devops", "helm lint charts/web", "ask", f"helm {_NOT_ALLOWED}"),
    Everyday("devops", "jq '.scripts' package.json", "ask", f"jq {_NOT_ALLOWED}"),
    Everyday("devops", "make test", "ask", f"make {_NOT_ALLOWED}; it runs the Makefile's recipes"),
    Everyday(
        "devops",
        "git push -u origin fix/helm-values",
        "ask",
        "git push is not in the seed's allow list",
    ),
    Everyday(
        "devops", "git pull --rebase origin main", "ask", "git pull is not in the seed's allow list"
    ),
    Everyday("devops", "git remote -v", "ask", "git remote is not in the seed's allow list"),
    Everyday(
        "devops",
        "chmod +x scripts/deploy.sh",
        "ask",
        f"chmod {_NOT_ALLOWED} (only chmod 777 is denied)",
    ),
    Everyday(
        "devops",
        "./scripts/deploy.sh staging",
        "ask",
        "runs a program by its path in the workspace: no allow rule names it, and the "
        "contained allow covers only an allowed interpreter running a script",
    ),
    Everyday(
        "devops", "rm -rf node_modules dist", "ask", f"rm {_NOT_ALLOWED} (rm -rf / alone is denied)"
    ),
    Everyday(
        "devops",
        "curl -sSf https://registry.npmjs.org/express/latest",
        "deny",
        "curl is in the seed's deny list (shell(curl:*)), even for a host sources.json allows",
    ),
    Everyday(
        "devops",
        "curl -I https://staging.example.com/healthz",
        "deny",
        "curl is in the seed's deny list",
    ),
    Everyday(
        "devops",
        "wget https://get.helm.sh/helm-v3.14.0-linux-amd64.tar.gz",
        "deny",
        "wget is in the seed's deny list (shell(wget:*))",
    ),
    Everyday(
        "devops",
        "sudo apt-get install -y jq",
        "deny",
        "sudo is in the seed's deny list (shell(sudo:*))",
    ),
    # ============================================================================================
    # research-agent
    # ============================================================================================
    Everyday("research", "ls -lt papers | head", "allow"),
    Everyday("research", "tree papers -L 1", "allow"),
    Everyday("research", "cat notes/todo.md", "allow"),
    Everyday("research", 'grep -rn "attention" notes/', "allow"),
    Everyday("research", 'grep -ril "transformer" papers/txt/', "allow"),
    Everyday("research", 'grep -c "^@article" refs.bib', "allow"),
    Everyday("research", "grep -o 'doi = {[^}]*}' refs.bib | sort | uniq -d", "allow"),
    Everyday("research", "grep -h '^title:' notes/*.md | cut -d: -f2- | sort", "allow"),
    Everyday("research", "find papers -name '*.pdf' -mtime -7", "allow"),
    Everyday("research", 'find notes -type f -name "*.md" | xargs grep -l "TODO"', "allow"),
    Everyday("research", "wc -w notes/*.md", "allow"),
    Everyday("research", "head -c 2000 papers/txt/1706.03762.txt", "allow"),
    Everyday("research", "sed -n '/^## Method/,/^## /p' notes/vaswani2017.md", "allow"),
    Everyday("research", "awk 'length > 200' notes/summary.md | wc -l", "allow"),
    Everyday(
        "research",
        "tr -s '[:space:]' '\\n' < papers/txt/abstract.txt | tr 'A-Z' 'a-z' | sort | uniq -c | sort -rn | head -30",
        "allow",
    ),
    Everyday("research", "cut -f1,3 results/citations.tsv | sort -k2 -n -r | head", "allow"),
    Everyday("research", "sort -t, -k3 -nr results/scores.csv | head -20", "allow"),
    Everyday("research", "diff notes/draft_v1.md notes/draft_v2.md", "allow"),
    Everyday("research", "ls papers/txt | sed 's/\\.txt$//' > ids.txt", "allow"),
    Everyday("research", "tail -n 15 notes/reading_log.md", "allow"),
    Everyday(
        "research", "python3 -m json.tool results/s2_response.json | grep -n '\"title\"'", "allow"
    ),
    Everyday(
        "research", 'python3 fetch_arxiv.py --query "graph neural networks" --max 50', "allow"
    ),
    Everyday(
        "research",
        "python3 scripts/semantic_scholar.py --paper-id 10.48550/arXiv.1706.03762",
        "allow",
    ),
    Everyday("research", "python3 scripts/pdf_to_text.py papers/pdf/ papers/txt/", "allow"),
    Everyday(
        "research", "python3 summarize.py --input papers/txt --out notes/summaries.md", "allow"
    ),
    Everyday(
        "research",
        'for id in 2303.08774 2305.10403; do python3 fetch_arxiv.py --id "$id"; done',
        "allow",
    ),
    Everyday("research", 'python3 -c "import arxiv; print(arxiv.__version__)"', "allow"),
    Everyday(
        "research",
        'python3 -c "import urllib.request; print(urllib.request.urlopen('
        "'https://export.arxiv.org/api/query?id_list=1706.03762').read()[:500])\"",
        "allow",
    ),
    Everyday(
        "research",
        "python3 - <<'EOF'\nimport requests\nr = requests.get('https://api.semanticscholar.org/graph/v1/"
        "paper/arXiv:1706.03762', params={'fields': 'title,citationCount'})\nprint(r.json())\nEOF",
        "allow",
    ),
    Everyday("research", "python3 -m pytest tests/test_parsers.py -q", "allow"),
    Everyday("research", "python3 -m venv .venv", "allow"),
    Everyday("research", "bash scripts/fetch_all.sh", "allow"),
    Everyday("research", "pip install arxiv pypdf feedparser", "allow"),
    Everyday("research", "pip install semanticscholar==0.8.4", "allow"),
    Everyday("research", "python3 -m pip install bibtexparser", "allow"),
    Everyday("research", "pip list | grep -i pdf", "allow"),
    Everyday(
        "research", "git clone --depth 1 https://github.com/huggingface/transformers.git", "allow"
    ),
    Everyday("research", "git status", "allow"),
    Everyday("research", "git log --oneline -10", "allow"),
    Everyday("research", "git log -5 --stat", "allow"),
    Everyday("research", "git diff notes/", "allow"),
    Everyday("research", 'git add notes/ && git commit -m "Add reading notes on RLHF"', "allow"),
    Everyday("research", "mkdir -p papers/pdf papers/txt notes", "allow"),
    Everyday("research", "mv downloads/*.pdf papers/pdf/", "allow"),
    Everyday("research", "cp refs.bib refs.bak.bib", "allow"),
    Everyday("research", "touch notes/literature_review.md", "allow"),
    Everyday("research", 'echo "- [ ] read 2303.08774" >> notes/todo.md', "allow"),
    Everyday("research", "printf '%s\\n' 2303.08774 2305.10403 > ids.txt", "allow"),
    Everyday(
        "research",
        "cat >> notes/reading_log.md <<'EOF'\n## 1706.03762 Attention Is All You Need\n"
        "- self-attention replaces recurrence\n- read: sections 3, 5\nEOF",
        "allow",
    ),
    # --- what the seed does not allow ----------------------------------------------------------
    Everyday(
        "research",
        "pdftotext papers/pdf/1706.03762.pdf papers/txt/1706.03762.txt",
        "ask",
        f"pdftotext {_NOT_ALLOWED}",
    ),
    Everyday(
        "research", "pandoc notes/review.md -o notes/review.pdf", "ask", f"pandoc {_NOT_ALLOWED}"
    ),
    Everyday("research", "jq '.data[].title' results/s2_search.json", "ask", f"jq {_NOT_ALLOWED}"),
    Everyday("research", "rm papers/txt/*.tmp", "ask", f"rm {_NOT_ALLOWED}"),
    Everyday("research", "git push origin main", "ask", "git push is not in the seed's allow list"),
    Everyday(
        "research",
        'curl -s "https://export.arxiv.org/api/query?search_query=all:transformer&max_results=5"',
        "deny",
        "curl is in the seed's deny list, even for a domain sources.json allows",
    ),
    Everyday(
        "research",
        "wget https://arxiv.org/pdf/1706.03762 -O papers/pdf/1706.03762.pdf",
        "deny",
        "wget is in the seed's deny list",
    ),
    Everyday(
        "research",
        "git clone https://gitlab.com/nlp-group/corpus-tools.git",
        "deny",
        "the research agent's sources.json lists only https://github.com/* in git.allowed_remotes; "
        "asking cannot create a remote",
    ),
)
