import math

import torch

from beluga.train.losses import DIR_FN_INDEX, dir_loss, inv_loss, mft_loss


def lg(*probs):
    """Logits whose softmax is exactly ``probs``."""
    return torch.log(torch.tensor([list(probs)], dtype=torch.float64))


def test_mft_soft_labels():
    logits = lg(0.2, 0.8)
    assert math.isclose(mft_loss(logits, torch.tensor([[0.0, 1.0]], dtype=torch.float64)).item(), -math.log(0.8))
    neutral = mft_loss(logits, torch.tensor([[0.5, 0.5]], dtype=torch.float64)).item()
    assert math.isclose(neutral, -(0.5 * math.log(0.2) + 0.5 * math.log(0.8)))
    notneg = mft_loss(logits, torch.tensor([[1 / 3, 2 / 3]], dtype=torch.float64)).item()
    assert math.isclose(notneg, -(math.log(0.2) / 3 + 2 * math.log(0.8) / 3))


def test_inv_cross_entropy_original_to_perturbed():
    val = inv_loss(lg(0.7, 0.3), lg(0.4, 0.6)).item()
    assert math.isclose(val, -(0.7 * math.log(0.4) + 0.3 * math.log(0.6)))


def _dir(p0, pi, fn):
    return dir_loss(lg(*p0), lg(*pi), torch.tensor([DIR_FN_INDEX[fn]])).item()


def test_dir_losses():
    # not more negative: eps = max(0, pi[0] - p0[0])
    assert math.isclose(_dir((0.3, 0.7), (0.5, 0.5), "not_more_negative"), -math.log(1 - 0.2), rel_tol=1e-9)
    assert _dir((0.5, 0.5), (0.3, 0.7), "not_more_negative") == 0.0
    # not more positive
    assert math.isclose(_dir((0.6, 0.4), (0.2, 0.8), "not_more_positive"), -math.log(1 - 0.4), rel_tol=1e-9)
    # not more confident: c* = argmax p0 = 1 (0.7), pi[1] = 0.9 -> eps 0.2
    assert math.isclose(_dir((0.3, 0.7), (0.1, 0.9), "not_more_confident"), -math.log(0.8), rel_tol=1e-9)
    assert _dir((0.3, 0.7), (0.4, 0.6), "not_more_confident") == 0.0
    # not less confident: c* = 0 (0.8), pi[0] = 0.5 -> eps 0.3
    assert math.isclose(_dir((0.8, 0.2), (0.5, 0.5), "not_less_confident"), -math.log(0.7), rel_tol=1e-9)


def test_dir_slice_mask_zeroes_pairs():
    out = dir_loss(torch.cat([lg(0.3, 0.7), lg(0.3, 0.7)]), torch.cat([lg(0.1, 0.9), lg(0.1, 0.9)]),
                   torch.tensor([DIR_FN_INDEX["not_more_confident"]] * 2), keep=torch.tensor([True, False]))
    assert out[0] > 0 and out[1] == 0


def test_dir_confidence_of_the_expectations_class_where_given():
    # NLI (entailment, neutral, contradiction): the hypothesis negated; "P(entailment) must not rise". The original
    # is predicted contradiction (0.6): by its top class the loss would hold P(contradiction) down, the wrong way.
    p0, pi = lg(0.3, 0.1, 0.6), lg(0.1, 0.1, 0.8)
    fn = torch.tensor([DIR_FN_INDEX["not_more_confident"]])
    assert math.isclose(dir_loss(p0, pi, fn).item(), -math.log(1 - 0.2), rel_tol=1e-6)      # top class: 0.6 -> 0.8
    assert dir_loss(p0, pi, fn, cls=torch.tensor([0])).item() == 0.0                          # entailment fell
    rise = lg(0.5, 0.1, 0.4)
    assert math.isclose(dir_loss(p0, rise, fn, cls=torch.tensor([0])).item(), -math.log(1 - 0.2), rel_tol=1e-6)
    # -1: the original's top class, pair by pair in one batch
    both = dir_loss(torch.cat([p0, p0]), torch.cat([pi, pi]), fn.repeat(2), cls=torch.tensor([0, -1]))
    assert both[0].item() == 0.0 and math.isclose(both[1].item(), -math.log(0.8), rel_tol=1e-6)
