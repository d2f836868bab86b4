"""Verbalized Bayesian persuasion (Li, Lin, Wang, Jin, Zha & Wang, arXiv 2502.01587).

Classic Bayesian persuasion solved exactly (the obedience LP with scipy's HiGHS, concavification,
closed forms), the verbalized game over a text channel (a sender chat model writes letters from a
prompt, a receiver chat model reads the verbalized commitment and the letter), and the
equilibrium-finding proposal loop. Chat models come from :mod:`icml26.core.llm`: offline template
sender and exact-Bayes text receiver by default, any OpenAI-compatible server by ``--llm URL``.
"""

from .classic import (
    BPInstance,
    SignalingScheme,
    binary_threshold,
    binary_threshold_optimum,
    concavify_binary,
    courtroom,
    full_disclosure_value,
    law_enforcement,
    no_information_value,
    receiver_best_action,
    recommendation_letter,
    scheme_outcome,
    solve_persuasion_lp,
)
from .solver import (
    SearchResult,
    find_equilibrium,
    grid_search,
    local_proposer,
    played_deviation_gain,
    random_search,
    receiver_deviation_gain,
    sender_deviation_gain,
)
from .verbal import (
    CLASSES,
    Episodes,
    Record,
    Scenario,
    SenderPrompt,
    bayesian_receiver,
    class_posterior,
    credulous_receiver,
    exact_outcome,
    llm_reader,
    parse_policy,
    parse_record,
    play,
    read_letter,
    scenario,
    template_sender,
    track_record,
    write_letter,
)

PAPER = {
    "title": "Verbalized Bayesian Persuasion",
    "authors": "Wenhao Li, Yue Lin, Xiangfeng Wang, Bo Jin, Hongyuan Zha, Baoxiang Wang",
    "arxiv": "2502.01587",
    "code_url": None,
}

__all__ = [
    "CLASSES", "PAPER", "BPInstance", "Episodes", "Record", "Scenario", "SearchResult", "SenderPrompt",
    "SignalingScheme", "bayesian_receiver", "binary_threshold", "binary_threshold_optimum",
    "class_posterior", "concavify_binary", "courtroom", "credulous_receiver", "exact_outcome",
    "find_equilibrium", "full_disclosure_value", "grid_search", "law_enforcement", "llm_reader",
    "local_proposer", "no_information_value", "parse_policy", "parse_record", "play",
    "played_deviation_gain", "random_search", "read_letter",
    "receiver_best_action", "receiver_deviation_gain", "recommendation_letter", "scenario",
    "scheme_outcome", "sender_deviation_gain", "solve_persuasion_lp", "template_sender",
    "track_record", "write_letter",
]
