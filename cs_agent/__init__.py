"""The agent-side client of Context Service, for an agent's sandbox executor.

No Django, no dependencies beyond the standard library: import it from the agent's image.

    from cs_agent import ApprovalClient

    client = ApprovalClient.from_env()          # CS_URL, CS_TOKEN, CS_AGENT_TYPE, …
    verdict = client.shell("pip install pandas", context_id="ctx-abc123")
    if verdict.allowed:
        run("pip install pandas")

See docs/agent-client.md for the LangGraph ``interrupt()`` / A2A ``input_required`` mapping.
"""

from cs_agent.client import ApprovalClient, ApprovalError, Verdict
from cs_agent.executor import Executor, RunResult
from cs_agent.workspace import WorkspaceClient

__all__ = ["ApprovalClient", "ApprovalError", "Executor", "RunResult", "Verdict", "WorkspaceClient"]
