"""Models and planners: the LLM port, the tool-calling planner and the embedded planner.

Nothing here imports litellm at import time (the port imports it on its first call).
"""

from metnos.mechanisms.llm.embedded import plan_embedded
from metnos.mechanisms.llm.planner import plan_with_llm
from metnos.mechanisms.llm.port import LLMPort, LLMReply, RawToolCall, configured
from metnos.mechanisms.llm.tools import Plan, PlanStep, ToolSpec

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
