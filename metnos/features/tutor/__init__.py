"""The Tutor: answers about Metnos from a signed catalog of its docs (issue 14)."""
