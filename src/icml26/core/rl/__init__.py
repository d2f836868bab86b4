"""Online decision making: batched bandit / experts environments with exact regret accounting
and the classical baselines (UCB1, Thompson sampling, epsilon-greedy, sliding-window UCB, Hedge)."""

from .bandits import (
    BanditBatch,
    ExpertsBatch,
    NonStationaryBanditBatch,
    SingleBanditEnv,
    sample_bandits,
    sample_experts,
    sample_nonstationary,
)
from .policies import (
    UCB1,
    EpsilonGreedy,
    SlidingWindowUCB,
    ThompsonSampling,
    UniformRandom,
    hedge,
    run_policy,
)

__all__ = [
    "UCB1", "BanditBatch", "EpsilonGreedy", "ExpertsBatch", "NonStationaryBanditBatch",
    "SingleBanditEnv", "SlidingWindowUCB", "ThompsonSampling", "UniformRandom", "hedge",
    "run_policy", "sample_bandits", "sample_experts", "sample_nonstationary",
]
