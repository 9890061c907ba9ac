"""The simulated tool environment of benchmarks/procedural.py: 20 scenarios, their wordings and hidden paths.

Each scenario has 4 tool paths with hidden success probabilities (one clearly
best, the rest 0.15-0.65) and costs (tool calls, 1-4); a failed path has one step
that answers with an error.  Requests are phrased 4 ways per scenario, with a random
order or parcel number, so scenario grouping has to meet paraphrases.
Everything is drawn from one seeded ``random.Random``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

WORDINGS: dict[str, list[str]] = {
    "refund": ["I want a refund for order {n}", "please give me my money back for order {n}",
               "refund my purchase {n}", "can I get order {n} refunded?"],
    "track": ["where is my parcel {n}?", "track shipment {n} for me", "has package {n} been delivered yet?",
              "what's the delivery status of parcel {n}"],
    "password": ["I forgot my password", "reset my account password please", "I can't log in, need a new password",
                 "help me change my login password"],
    "invoice": ["send me the invoice for order {n}", "I need a receipt for purchase {n}",
                "can you email the bill for order {n}", "download invoice {n}"],
    "address": ["change my delivery address", "update the shipping address on my account",
                "I moved, please fix my address", "edit where my orders are shipped"],
    "cancel": ["cancel order {n}", "please stop order {n} before it ships", "I don't want order {n} anymore",
               "abort my purchase {n}"],
    "exchange": ["exchange the shoes in order {n} for a bigger size", "swap item from order {n} for another size",
                 "I need a different size for order {n}", "replace the size of my order {n}"],
    "subscribe": ["sign me up for the newsletter", "subscribe me to your email updates",
                  "I want to get your weekly newsletter", "add me to the mailing list"],
    "unsubscribe": ["stop sending me marketing emails", "unsubscribe me from promotions",
                    "remove me from your mailing list", "no more promotional emails please"],
    "warranty": ["my blender from order {n} broke, is it under warranty?", "file a warranty claim for order {n}",
                 "the product I bought in order {n} stopped working", "warranty repair for purchase {n}"],
    "giftcard": ["what's the balance on my gift card {n}", "check gift card {n} balance",
                 "how much is left on gift card {n}?", "gift card {n} remaining amount"],
    "stock": ["is the red jacket in stock?", "do you have the red jacket available",
              "when will the red jacket be back in stock", "check availability of the red jacket"],
    "price_match": ["I found the TV cheaper elsewhere, can you match the price?", "price match request for the TV",
                    "another shop sells this TV for less, match it", "can you lower the TV price to match a competitor"],
    "loyalty": ["how many loyalty points do I have", "check my rewards points balance",
                "what is my points total in the rewards program", "show my loyalty program points"],
    "damaged": ["order {n} arrived damaged", "the box of order {n} was crushed and the item is broken",
                "my delivery {n} came broken", "item in order {n} is damaged on arrival"],
    "payment": ["update the credit card on my account", "change my payment method",
                "I want to pay with a different card from now on", "replace my saved card"],
    "delete_account": ["delete my account", "close my account and remove my data",
                       "I want my account erased", "please deactivate and delete my profile"],
    "store_hours": ["what time does the downtown store open?", "opening hours of the downtown shop",
                    "is the downtown store open on sunday", "when does your downtown branch close"],
    "coupon": ["my coupon code {n} doesn't work", "discount code {n} is rejected at checkout",
               "why is promo code {n} invalid", "apply coupon {n} to my cart, it fails"],
    "bulk_order": ["I want to order 500 mugs for my company", "corporate bulk purchase of 500 mugs",
                   "quote for a wholesale order of 500 mugs", "can I buy 500 mugs at a business discount"],
}

TUNE_WORDINGS: dict[str, list[str]] = {
    # The tune split: other tasks, other wordings.  Thresholds (ProceduralSettings.merge_similarity) and
    # the agent's and recall's knobs are chosen on these and on TUNE_SEEDS only; the reported runs use
    # WORDINGS and seeds outside TUNE_SEEDS (benchmarks/procedural_tune.py).
    "reorder": ["order the same items as order {n} again", "repeat my previous purchase {n}",
                "buy everything from order {n} one more time", "reorder what I got in order {n}"],
    "split_payment": ["can I pay for order {n} with two cards", "split the payment of order {n}",
                      "charge half of order {n} to another card", "use two payment methods for purchase {n}"],
    "late_delivery": ["order {n} is late, it should have arrived yesterday", "my package {n} missed the delivery date",
                      "why hasn't order {n} shown up on time", "delivery of {n} is overdue"],
    "gift_wrap": ["add gift wrapping to order {n}", "can order {n} be wrapped as a present",
                  "I want order {n} gift wrapped", "please wrap purchase {n} as a gift"],
    "email_change": ["change the email address on my account", "update my login email",
                     "I have a new email, please change it in my profile", "switch my account to a different email"],
    "return_label": ["send me a return label for order {n}", "I need a shipping label to return order {n}",
                     "print a return label for purchase {n}", "how do I get a prepaid label to send back order {n}"],
    "size_guide": ["what size should I get in these boots", "do the boots run small or large",
                   "help me pick the right boot size", "size chart for the boots please"],
    "two_factor": ["turn on two-factor authentication", "enable 2FA on my account",
                   "I want a second login step with my phone", "set up two step verification for me"],
    "missing_item": ["order {n} arrived with an item missing", "one product from order {n} wasn't in the box",
                     "my package {n} is incomplete", "I only got part of order {n}"],
    "tax_exempt": ["make my business account tax exempt", "I have a tax exemption certificate to upload",
                   "stop charging sales tax on my company orders", "register my nonprofit for tax-free purchases"],
    "pickup": ["can I pick up order {n} in store instead", "switch order {n} to in-store pickup",
               "I'd rather collect order {n} myself at the shop", "change delivery of {n} to click and collect"],
    "review": ["I want to write a review of the headphones", "how do I rate the headphones I bought",
               "leave feedback on my headphones purchase", "post a product review for the headphones"],
}

COST = 0.2
"""The agent's cost exponent (``choose``): chosen on the tune split, seeds 101-112, from 0, 0.1, 0.2, 0.3
(benchmarks/README.md, session 18b): 6 % fewer calls per solved task, gap to the oracle +1 point, drift followed
as often as with 0; 0.3 followed drift on 1 seed of 12 against 5."""

TUNE_SEEDS = (101, 102, 103)
"""Seeds the knobs were tuned on; never reported."""

TOOLS = ["lookup_order", "lookup_account", "search_kb", "call_api", "ask_human", "verify", "send_email",
         "update_record", "check_inventory", "open_ticket", "apply_credit", "fetch_policy"]


@dataclass
class Path:
    tools: tuple[str, ...]
    p: float


@dataclass
class Scenario:
    name: str
    wordings: list[str]
    paths: list[Path]
    drift_to: list[float] | None = None
    """Success probabilities after the drift point (the drift run's scenario only)."""

    @property
    def best(self) -> int:
        return max(range(len(self.paths)), key=lambda i: (self.paths[i].p, -len(self.paths[i].tools)))


@dataclass
class Environment:
    scenarios: list[Scenario]
    rng: random.Random = field(default_factory=random.Random)

    def request(self, sc: Scenario) -> str:
        return self.rng.choice(sc.wordings).format(n=self.rng.randint(1000, 9999))

    def attempt(self, path: Path) -> tuple[bool, int]:
        """(succeeded, the step that failed or -1)."""
        if self.rng.random() < path.p:
            return True, -1
        return False, self.rng.randrange(len(path.tools))


def build(seed: int, wordings_of: dict[str, list[str]] | None = None) -> Environment:
    rng = random.Random(seed)
    scenarios = []
    for name, wordings in (wordings_of or WORDINGS).items():
        paths: list[Path] = []
        seen: set[tuple[str, ...]] = set()
        while len(paths) < 4:
            tools = tuple(rng.sample(TOOLS, rng.randint(1, 4)))
            if tools not in seen:
                seen.add(tools)
                paths.append(Path(tools, 0.0))
        best = rng.randrange(4)
        for i, path in enumerate(paths):
            path.p = round(rng.uniform(0.85, 0.95) if i == best else rng.uniform(0.15, 0.65), 2)
        scenarios.append(Scenario(name, wordings, paths))
    return Environment(scenarios, random.Random(seed + 1))


def add_drift(env: Environment) -> Scenario:
    """The first scenario's best path collapses halfway and its worst becomes the best."""
    sc = env.scenarios[0]
    old, new = sc.best, min(range(4), key=lambda i: sc.paths[i].p)
    after = [p.p for p in sc.paths]
    after[old], after[new] = 0.2, 0.92
    sc.drift_to = after
    return sc


def choose(recall: Any, sc: Scenario, rng: random.Random, follow: float | None,
           cost: float = COST) -> tuple[int, tuple[str, ...] | None]:
    """The scripted agent's pick: ``(path index, the recommended tools or None)``.

    Follows the top recalled path when its confidence allows: at least
    ``follow`` (a fixed bar), or, with ``follow=None``, at least every other
    path's Thompson draw.  Otherwise explores: Thompson sampling over every
    path's recalled recency-weighted outcomes (untried ones at Beta(1, 1)).
    With ``cost`` (alpha) > 0 each draw is divided by the path's tool calls to
    the power alpha before the pick (success per call: the measure the
    call-count goal counts); the draws themselves, and so the random stream,
    are unchanged.
    """
    known = {tuple(p.tools): p for p in [*recall.procedures, *recall.avoid, *recall.unproven]}
    top = recall.procedures[0] if recall.procedures else None
    draws = []
    for i, path in enumerate(sc.paths):
        p = known.get(path.tools)
        n = p.evidence if p else 0.0
        wins = (p.recent_success_rate or 0.0) * n if p else 0.0
        draws.append((rng.betavariate(wins + 1, n - wins + 1) / len(path.tools) ** cost, i))
    recommended = tuple(top.tools) if top else None
    if top is not None:
        i_top = next((i for i, path in enumerate(sc.paths) if path.tools == recommended), None)
        bar = follow if follow is not None else max((d for d, i in draws if i != i_top), default=0.0)
        if i_top is not None and top.confidence >= bar:
            return i_top, recommended
    return max(draws)[1], recommended
