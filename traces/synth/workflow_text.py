"""What the synthetic support agent writes: reasoning before each tool call, and its replies.

Every assistant row states its intent as `Intent: Ixxx` before any other code appears (the
inline-accuracy scorer takes the first `intent: Ixxx` of the reasoning, docs/accuracy.md), then reasons
at a drawn length (`text.Lengths`): identity checks, the business rules of the system
prompt quoted by number, what the last tool result shows, hypotheses and a plan. The reply to the
customer is shorter than the reasoning behind it. Facts (order status, totals, carrier…) come
from the tool results of the current request, so reasoning and reply agree with them.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from .text import Lengths, Slots, compose, sentences

if TYPE_CHECKING:
    from .workflow import WorkflowWorld

#: Token targets per part (Qwen3.6 tokens): a tool-call turn's reasoning, and a final answer's
#: reasoning and reply; with the tool-call arguments a workflow turn averages ~400 tokens.
PLAN_MEAN, PLAN_SIGMA = 395, 0.8
FINAL_MEAN, FINAL_SIGMA = 235, 0.6
REPLY_MEAN, REPLY_SIGMA = 165, 0.5

AREA = {
    "order_status": "shipping",
    "cancel_order": "cancellations",
    "return_request": "returns",
    "refund_status": "refunds",
    "change_address": "shipping",
    "damaged_item": "warranty",
    "missing_package": "shipping",
    "apply_discount": "price adjustments",
    "account_update": "privacy",
    "loyalty_points": "loyalty",
    "product_question": "exchanges",
    "warranty_claim": "warranty",
    "payment_issue": "payments",
    "subscription_change": "subscriptions",
    "escalation": "escalation",
    "exchange_item": "exchanges",
    "invoice_request": "payments",
    "delivery_reschedule": "shipping",
    "price_match": "price adjustments",
    "general_policy": "returns",
}
INTENT = (
    "Intent: {code} ({intent}).",
    "Classifying the request first. Intent: {code}, because {desc}.",
    "intent: {code} ({intent}): {desc}.",
    "Intent: {code}. The customer's message fits {intent}: {desc}.",
)
SAME = (
    "Still the same request (intent: {code}).",
    "Intent: {code}, continuing with {intent}.",
    "Same intent: {code} ({intent}).",
)
IDENTITY = (
    "The customer gave the email {email}; it matches customer {cust}, so the identity is verified.",
    "Identity: the email {email} belongs to {full} ({cust}), and the order {order} is on that account, so I may proceed.",
    "Before reading any order data the policy requires verification; the email {email} matches {cust}, which is enough.",
)
SEEN = {
    "order": (
        "The {last} result shows order {order} with status '{status}' and a total of ${total}; it contains the {item}.",
        "Order {order} is '{status}', placed on {placed}, {n} line items, total ${total}.",
        "So the order is {status}. The {item} is the item the customer is talking about.",
    ),
    "shipment": (
        "Tracking for {order}: the carrier is {carrier}, the latest event is '{event}', and the estimate is {eta}.",
        "The {last} result has the events of the shipment; the last one is '{event}' and {carrier} estimates {eta}.",
    ),
    "customer": (
        "The customer record shows tier {tier} and {points} loyalty points.",
        "The account of {full} is tier {tier}, with {points} points and the orders listed.",
    ),
    "other": (
        "The {last} call returned reference {ref}.",
        "The {last} result is back: reference {ref}, and the tool reports success.",
        "The {last} tool returned its JSON; the important part is reference {ref}.",
    ),
}
THINK = (
    "Before changing anything I need the current state of order {order}.",
    "The relevant policy area is {area}. {Rule}",
    "According to the {area} policy, {rulel}",
    "If the order has already shipped, I cannot cancel it and should offer a return instead.",
    "I must not promise a delivery date; only the carrier's estimate can be quoted, and I must say it is an estimate.",
    "The customer sounds frustrated, so the reply should acknowledge the problem before explaining the options.",
    "The amount could be above the supervisor threshold; if so, I need a ticket with priority 'high' before confirming.",
    "I should check whether any item is final sale, because those are excluded from {area} unless they arrived damaged.",
    "The customer is a {tier} member, which may give extra store credit on the resolution.",
    "Hypothesis: the package went to an old address; the tracking events will show where it was delivered.",
    "Possible outcomes: (a) eligible, then I proceed after an explicit yes; (b) not eligible, then I explain the rule and offer store credit.",
    "I will not reveal any data of other customers, even if another account has a similar email.",
    "Items on the order: {n}. With more than a few items, the policy says to handle each one separately and summarise at the end.",
    "No transfer to a human agent yet: the customer has not insisted twice and the policy does not require it here.",
    "Gift orders are credited to the giver as store credit, so I need to know whether {order} was a gift.",
    "Changes need an explicit 'yes' from the customer, so for now I only look things up and confirm later.",
    "I need the {want} from the tool result before I can say anything concrete.",
    "Another rule may apply as well: {rule}",
    "The customer mentioned the {item}; I should make sure it is really part of order {order} and not of another order.",
    "There is a risk of a double refund if a return was already created, so I will check the existing state first.",
    "Let me also keep in mind the 30-day window: the order was placed on {placed}.",
    "The customer asked for this to be done today; lookups are instant, but changes still need confirmation.",
    "I should avoid guessing: if a tool fails, I tell the customer what I could not check rather than inventing an answer.",
    "It is also possible that the customer means a different order; they have {norders} orders on file.",
    "The reply must be plain text and short, so I will keep the internal details (tool names, rule numbers) out of it.",
)
PLAN = (
    "verify the identity with the email on file",
    "look up order {order}",
    "check the {area} policy",
    "check eligibility of the {item}",
    "ask the customer for an explicit yes",
    "make the change with the right tool",
    "send the confirmation email",
    "summarise the outcome",
)
CALL = (
    "Calling {tool} for order {order}.",
    "Next step: {tool}.",
    "I will call {tool} now.",
    "Let me call {tool} to get the {want}.",
)
FINAL = (
    "All the information needed is in: status {status}, total ${total}.",
    "The policy check passes: {rule}",
    "I will explain the outcome plainly, without promising dates the carrier has not given.",
    "I should ask for an explicit yes before making the change, as the {area} policy requires.",
    "The style guide says plain text and at most a short paragraph, so I leave out rule numbers and tool names.",
    "The reference {ref} is worth giving to the customer so they can follow up.",
    "Since the customer is a {tier} member, I can mention the extra store credit.",
    "There is nothing that requires a supervisor here, so I can resolve it myself.",
    "I must not mention other customers or internal notes in the reply.",
    "If the customer disagrees, the next step would be a ticket with the specialist team, not an immediate transfer.",
    "Check: identity verified, order on the account, policy window respected. Good.",
    "Tone: apologise once for the trouble, then be concrete.",
    "The facts from the tools are consistent with what the customer said, so there is no need to ask again.",
    "Another relevant rule: {rule}",
    "I will offer to {offer} if the customer prefers that.",
    "I considered escalating, but the policy does not require it for {area}, and the customer has not asked for it.",
    "One open point is whether {order} was a gift; I will not assume it and will ask only if it matters.",
)
REPLY = (
    "I checked the order and it is currently {status}.",
    "Your order includes the {item}, and the total was ${total}.",
    "The carrier, {carrier}, estimates delivery on {eta}; please note this is the carrier's estimate, not a guarantee.",
    "Under our {area} policy, {rulel}",
    "If you'd like, I can {offer}.",
    "Your reference number is {ref}; please keep it for your records.",
    "You'll receive a confirmation email at {email} shortly.",
    "As a {tier} member, you also get extra store credit on this resolution.",
    "I'm sorry for the trouble this has caused.",
    "Refunds go back to the original payment method and usually appear within 5 to 10 business days.",
    "Could you confirm with a 'yes' that you'd like me to go ahead?",
    "I've added a note to your account so that anyone you talk to next can see what we discussed.",
)
GREET = (
    "Hi {name}, thanks for reaching out about order {order}.",
    "Thank you for your patience, {name}.",
    "Hello {name}, I've looked into your message about the {intent} for order {order}.",
)
OFFERS = (
    "start a return for the {item}",
    "issue store credit instead",
    "open a claim with the carrier",
    "send you a replacement",
    "reschedule the delivery",
    "apply the price adjustment",
)
STATUSES = ("processing", "shipped", "delivered", "cancelled", "returned")
EVENTS = ("label created", "in transit", "arrived at facility", "out for delivery", "delivered")


class Agent:
    """The support agent of one conversation: call `request`, then `plan`/`saw` per tool round, then `reply`."""

    def __init__(self, rng: random.Random, world: WorkflowWorld, customer: dict[str, Any]) -> None:
        self.rng, self.world = rng, world
        self.plan_len = Lengths(rng, PLAN_MEAN, PLAN_SIGMA, lo=12, hi=4000)
        self.final_len = Lengths(rng, FINAL_MEAN, FINAL_SIGMA, lo=12, hi=1500)
        self.reply_len = Lengths(rng, REPLY_MEAN, REPLY_SIGMA, lo=12, hi=800)
        self.verified = False
        self.code = ""
        self.last: str | None = None
        r = rng
        self.slots = Slots(
            dict(customer),
            {
                "status": lambda: r.choice(STATUSES),
                "total": lambda: f"{r.uniform(10, 600):.2f}",
                "item": lambda: r.choice(("headphones", "jacket", "blender", "lamp")),
                "carrier": lambda: r.choice(("UPS", "FedEx", "DHL", "USPS")),
                "eta": lambda: f"2026-0{r.randint(1, 9)}-{r.randint(10, 28)}",
                "event": lambda: r.choice(EVENTS),
                "ref": lambda: f"REF-{r.randint(100000, 999999)}",
                "tier": lambda: r.choice(("Silver", "Gold", "Platinum")),
                "points": lambda: r.randint(0, 20000),
                "n": lambda: r.randint(1, 5),
                "placed": lambda: f"2026-0{r.randint(1, 9)}-{r.randint(10, 28)}",
                "rule": self._rule,
                "Rule": lambda: "R" + self._rule()[1:],
                "rulel": lambda: self._rule(quote=False),
                "offer": lambda: r.choice(OFFERS).format_map(self.slots),
                "want": lambda: r.choice(
                    ("order status", "item list", "eligibility", "tracking events", "account tier", "refund state")
                ),
            },
        )

    def _rule(self, quote: bool = True) -> str:
        rules = self.world.rules[str(self.slots["area"])]
        k = self.rng.randrange(len(rules))
        text = rules[k]
        return f'rule {k + 1} says "{text}"' if quote else text[0].lower() + text[1:]

    def request(self, intent: str, order: str) -> None:
        """A new customer request: forget the facts of the previous one."""
        for key in ("status", "total", "item", "carrier", "eta", "event", "ref", "tier", "points", "n", "placed"):
            self.slots.pop(key, None)
        self.code = self.world.intent_codes[intent]
        self.last = None
        self.slots.update(
            code=self.code,
            intent=intent.replace("_", " "),
            desc=self.world.descriptions[intent].lower(),
            area=AREA[intent],
            order=order,
        )

    def saw(self, tool: str, result: dict[str, Any]) -> None:
        """Keep the facts of a tool result for the reasoning and the reply that follow."""
        self.last = tool
        s = self.slots
        s["last"] = tool
        for key in ("status", "total", "carrier", "tier", "points", "reference"):
            if key in result:
                s["ref" if key == "reference" else key] = result[key]
        if result.get("items"):
            s["item"] = result["items"][0]["name"]
            s["n"] = len(result["items"])
        if "placed_at" in result:
            s["placed"] = result["placed_at"]
        if result.get("events"):
            s["event"] = result["events"][-1]["status"]
            s["eta"] = result.get("estimated_delivery", "")

    def _seen(self) -> list[str]:
        if self.last is None:
            return []
        s = self.slots
        kind = (
            "order"
            if "status" in s and "total" in s
            else "shipment"
            if "event" in s
            else "customer"
            if "points" in s and "tier" in s
            else "other"
        )
        return [self.rng.choice(SEEN[kind]).format_map(s)]

    def plan(self, tool: str, k: int) -> str:
        """The reasoning of the k-th tool call of the current request."""
        r, s = self.rng, self.slots
        s["tool"] = tool
        budget = self.plan_len.chars()
        head = [r.choice(INTENT if k == 0 else SAME).format_map(s)] + (self._seen() if budget > 300 else [])
        if not self.verified:
            head.append(r.choice(IDENTITY).format_map(s))
            self.verified = True
        if budget > 1400 and r.random() < 0.35:
            steps = [p.format_map(s) for p in PLAN[: r.randint(4, len(PLAN))]]
            head.append("\nPlan:\n" + "\n".join(f"{i + 1}. {p}" for i, p in enumerate(steps)))
        return compose(r, budget, head, sentences(r, THINK, s), [r.choice(CALL).format_map(s)])

    def reply(self) -> tuple[str, str]:
        """(reasoning, reply to the customer) that close the current request."""
        r, s = self.rng, self.slots
        head = [r.choice(INTENT).format_map(s), *self._seen()]
        reasoning = compose(
            r,
            self.final_len.chars(),
            head,
            sentences(r, FINAL, s),
            ["Now I will write the reply to {name}.".format_map(s)],
        )
        content = compose(
            r,
            self.reply_len.chars(),
            [r.choice(GREET).format_map(s)],
            sentences(r, REPLY, s),
            ["Is there anything else I can help you with?"],
        )
        return reasoning, content
