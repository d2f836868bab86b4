"""Disempowerment potential in assistant conversations: a privacy-preserving measurement pipeline.

Sharma, McCain, Douglas, Duvenaud. "Who's in Charge? Disempowerment Patterns in Real-World LLM
Usage" (ICML 2026, arXiv 2601.19062), on the privacy design of Clio (Tamkin, McCain et al.,
arXiv 2412.13678). No official analysis code (private data); the schema prompts were not
retrievable, so the rubric here is our paraphrase of the published taxonomy.

Entry point: :func:`analyze` (library) and ``python -m icml26.papers.disempowerment analyze
FILE --out DIR [--llm URL]`` (command line; JSONL, JSON arrays and CSV, see :mod:`.readers`).
"""

from .classify import (
    RUBRIC,
    ChatSchemaClassifier,
    LLMUnavailableError,
    OracleClassifier,
    SchemaClassifier,
    TfidfSchemaClassifier,
    agreement,
    default_classifier,
    parse_levels,
)
from .corpus import Truth, WorldSpec, expected_rates, labelled_bank, write_corpus
from .jsonl import Conversation, MalformedLine, iter_jsonl, parse_conversation
from .pipeline import AnalyzeAborted, analyze, check_options
from .privacy import PrivacyConfig, audit_text, find_leaks, find_pii, scrub_pii
from .readers import InputError, read_at, sniff
from .schema import AXES, LEVELS
from .stats import cochran_armitage, newcombe_difference, one_in_n, rate
from .taxonomy import DOMAINS, domain_category

PAPER = {"title": "Who's in Charge? Disempowerment Patterns in Real-World LLM Usage",
         "arxiv": "2601.19062", "code": None}

__all__ = [
    "AXES", "DOMAINS", "LEVELS", "PAPER", "RUBRIC", "AnalyzeAborted", "ChatSchemaClassifier",
    "Conversation", "InputError", "LLMUnavailableError", "MalformedLine", "OracleClassifier",
    "PrivacyConfig", "SchemaClassifier", "TfidfSchemaClassifier", "Truth", "WorldSpec",
    "agreement", "analyze", "audit_text", "check_options", "cochran_armitage",
    "default_classifier", "domain_category", "expected_rates", "find_leaks", "find_pii",
    "iter_jsonl", "labelled_bank", "newcombe_difference", "one_in_n", "parse_conversation",
    "parse_levels", "rate", "read_at", "scrub_pii", "sniff", "write_corpus",
]
