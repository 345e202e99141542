"""Test helpers that go through real code: a scripted OpenAI-compatible server for the LLM."""

from metnos.testing.llm_server import ScriptedLLM

__all__ = ["ScriptedLLM"]
