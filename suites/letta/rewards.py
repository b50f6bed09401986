"""Reward composers of suites/letta/ascii_reward.yaml, written for letta-evals (its RewardOutput and decorator):
evals-cli stands in for that package, so the file loads unchanged. In a suite of your own a reward may be a plain
function (ctx) -> a number in [0, 1]."""

from letta_evals import RewardOutput, reward_composer


@reward_composer
def quality_if_ascii(ctx):
    """The judge's quality score, but only for art made of printable ASCII characters."""
    if ctx.grades["ascii_only"].score < 1.0:
        return RewardOutput(score=0.0, metadata={"reason": "not printable ASCII"})
    return RewardOutput(score=ctx.grades["quality"].score)


@reward_composer
def weighted_quality_ascii(ctx):
    """70% quality, 30% the ASCII check."""
    return 0.7 * ctx.grades["quality"].score + 0.3 * ctx.grades["ascii_only"].score
