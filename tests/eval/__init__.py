"""The retrieval eval: labelled stores and questions that look like real use of a coding
assistant's memory, and the harness that measures the product's search and recall on them
(``python -m tests.eval.recall``; the README's "Retrieval quality")."""
