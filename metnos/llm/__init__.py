"""Models and planners: the LLM port, the tool-calling planner and the embedded planner.

Nothing here imports litellm at import time (the port imports it on its first call).
"""

from metnos.llm.embedded import plan_embedded
from metnos.llm.planner import plan_with_llm
from metnos.llm.port import LLMPort, LLMReply, RawToolCall, configured
from metnos.llm.tools import Plan, PlanStep, ToolSpec

__all__ = [
    "LLMPort",
    "LLMReply",
    "Plan",
    "PlanStep",
    "RawToolCall",
    "ToolSpec",
    "configured",
    "plan_embedded",
    "plan_with_llm",
]
