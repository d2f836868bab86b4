"""Online decision making: batched bandit / experts environments with exact regret accounting
and the classical baselines (UCB1, Thompson sampling, epsilon-greedy, sliding-window UCB, Hedge);
vectorised PPO with GAE for batched environments (:mod:`.ppo`, imports torch lazily)."""

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

_PPO_NAMES = ("PPO", "PPOConfig", "ActorCritic", "VecEnv", "gae", "train_ppo", "episode_returns")


def __getattr__(name):  # torch is imported only when PPO is used
    if name in _PPO_NAMES:
        from . import ppo

        return getattr(ppo, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [*_PPO_NAMES,
    "UCB1", "BanditBatch", "EpsilonGreedy", "ExpertsBatch", "NonStationaryBanditBatch",
    "SingleBanditEnv", "SlidingWindowUCB", "ThompsonSampling", "UniformRandom", "hedge",
    "run_policy", "sample_bandits", "sample_experts", "sample_nonstationary",
]
