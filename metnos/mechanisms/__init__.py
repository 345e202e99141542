"""The mechanisms ring: policy, sandbox, audit, executors, llm, approvals, undo."""
