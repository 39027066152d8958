"""Evidence-labelled conversations for ``benchmarks/evidence_retrieval.py``: the data model and
the synthetic English set.

A :class:`Dataset` holds conversations (each one owner's memory: several dated sessions of two
named speakers) and questions, each naming the ids of the messages that hold its answer
(``evidence``) and ``fact``, the planted value, which the last evidence message states (a
two-turn fact's first evidence message is its setup, "I started a podcast"), so a test can check
the labels. Every message carries a ``message_id`` (``conv/session/index``), so
a search hit cites evidence when one of its sources has that id.

The synthetic set (:func:`synthetic_english`) imitates LoCoMo, the held-out check's shape: two
speakers (OpenAI ``name`` field, role ``user``), many sessions of 20-30 messages a few days
apart (``chat_time``), chatter between the facts (15% of it on the facts' topics with the same
kind of values, ``TOPICAL_SHARE``, to be hard to tell from a fact), facts planted in single
messages (some in two: a setup, the other speaker's question, the answer), often followed by a
follow-up exchange that does not repeat the value, questions that paraphrase the fact (``dog``
for ``beagle puppy``; one wording in three shares the question's key word, as LoCoMo's often
do), some facts changed in a later session (the question asks for the latest; only the change
is evidence), some answers a date (the session's date: "yesterday") or a name. It is seeded and
deterministic. Full size: 6 conversations, 16 sessions each, 2,410 messages, 132 questions.

What it measures: whether a question finds the one message of hundreds that answers it, by
meaning and by names, and whether a prompt budget holds it. Calibration: with today's default
config it scores close to what issue 30 reports for LoCoMo (recall@10 0.92 vs 0.88, @3 0.56 vs
0.61, 500-token context 0.26 vs 0.29; ``benchmarks/RESULTS.md``). Its limits: templates repeat
across conversations (a fact's wording is one of three), the chatter is simpler than real talk,
every question is answerable and single-hop, and none needs two facts combined.

>>> data = synthetic_english(seed=1, quick=True)
>>> q = data.questions[0]
>>> q.fact in data.message(q.evidence[-1])["content"]
True
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

__all__ = ["ENGLISH", "Conversation", "Dataset", "Question", "synthetic", "synthetic_english"]


@dataclass(frozen=True)
class Conversation:
    """One owner's memory: ``sessions``, each a list of message dicts (``role``, ``content``,
    ``chat_time``, ``message_id``, maybe ``name``), read with ``session_id`` ``conv_id/s<i>``."""

    conv_id: str
    user_id: str
    sessions: tuple[tuple[dict[str, Any], ...], ...]


@dataclass(frozen=True)
class Question:
    """A question about one conversation; ``evidence``: the ids of the messages that hold the
    answer; ``fact``: the planted value, which the last of them states; ``answer``: the
    expected answer (a date derived from the session for "yesterday"); ``kind``: fact,
    update, date, name, two_turn, keyword, title or clause."""

    conv_id: str
    text: str
    evidence: tuple[str, ...]
    fact: str
    answer: str
    kind: str


@dataclass
class Dataset:
    """Conversations and their questions; ``lang`` (en, zh, ja) and ``note`` (what it measures)."""

    name: str
    lang: str
    conversations: list[Conversation]
    questions: list[Question]
    note: str = ""
    _by_id: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def message(self, message_id: str) -> dict[str, Any]:
        """The message with ``message_id`` (``KeyError`` when none has it)."""
        if not self._by_id:
            for conv in self.conversations:
                for session in conv.sessions:
                    for msg in session:
                        self._by_id[msg["message_id"]] = msg
        return self._by_id[message_id]


# -- the catalog: each fact a speaker can hold ----------------------------------------------------
# says: first-person statements ({v} the value); ask: the question ({who}: the speaker), worded
# apart from says; update: the later change (a new value), ask_update its question; setup and
# prompt: a two-turn fact (the value comes in the answer after the other speaker asks); kind
# "date": the answer is the session's date (minus one day for "yesterday").
FACTS: list[dict[str, Any]] = [
    {
        "key": "dog",
        "kind": "name",
        "values": ["Biscuit", "Pepper", "Mochi", "Rufus", "Juniper", "Waffles"],
        "says": [
            "We finally brought home a beagle puppy last weekend, the kids named him {v}.",
            "Meet the newest member of the family: a rescue terrier called {v}!",
        ],
        "ask": "What is the name of {who}'s dog?",
    },
    {
        "key": "city",
        "kind": "fact",
        "values": ["Lisbon", "Valencia", "Gdansk", "Tallinn", "Bologna", "Utrecht", "Ljubljana"],
        "says": [
            "We just signed a lease on a flat in {v}, the move is next month.",
            "It's official, we're relocating to {v} at the end of the summer.",
        ],
        "ask": "Which city is {who} moving to?",
        "update": "Plans changed: the flat fell through, so we are going to {v} instead.",
        "ask_update": "Where is {who} relocating to in the end?",
    },
    {
        "key": "job",
        "kind": "fact",
        "values": [
            "Nordwind Logistics",
            "Brightleaf Labs",
            "Copperline Media",
            "Tidewater Health",
            "Quillstone Analytics",
            "Harbor Finch",
        ],
        "says": [
            "I accepted an offer as a data analyst at {v}, I start on Monday.",
            "Signed the contract today, I'll be a product designer at {v}.",
        ],
        "ask": "Which company did {who} take a job at?",
        "update": "Big news, I left that job already and joined {v} as a team lead.",
        "ask_update": "Who is {who}'s current employer?",
    },
    {
        "key": "instrument",
        "kind": "fact",
        "values": ["cello", "ukulele", "saxophone", "harp", "banjo", "trumpet"],
        "says": [
            "I've been taking {v} lessons every Thursday evening, my fingers hurt!",
            "Bought a second-hand {v} and found a teacher, practising every night now.",
        ],
        "ask": "What musical instrument is {who} learning to play?",
    },
    {
        "key": "cousin",
        "kind": "name",
        "values": ["Tobias", "Priya", "Mateo", "Greta", "Oskar", "Leonie"],
        "says": [
            "My cousin {v} is flying in on Friday to stay with us for a week.",
            "Guess who's crashing on our sofa for a week, my cousin {v}!",
        ],
        "ask": "Which relative is coming to stay with {who}?",
    },
    {
        "key": "allergy",
        "kind": "fact",
        "values": ["peanuts", "shellfish", "sesame", "kiwi", "strawberries"],
        "says": [
            "The doctor confirmed it, I'm allergic to {v}, so no more of that for me.",
            "Turns out the rash was a reaction to {v}, the allergy test came back positive.",
        ],
        "ask": "Which food does {who} have to avoid for health reasons?",
    },
    {
        "key": "car",
        "kind": "fact",
        "values": [
            "Mazda hatchback",
            "Volvo estate",
            "Subaru Outback",
            "Fiat Panda",
            "Skoda Octavia",
        ],
        "says": [
            "I finally traded in the old banger for a second-hand {v}.",
            "Picked up the keys to my {v} today, no more waiting for buses.",
        ],
        "ask": "What vehicle does {who} drive?",
        "update": "Small update: I sold the car and got a {v} instead, more room for the kids.",
        "ask_update": "What car does {who} have now?",
    },
    {
        "key": "event",
        "kind": "date",
        "values": ["half marathon", "skydiving jump", "driving test", "pottery class"],
        "says": ["I did my first {v} yesterday, I'm still buzzing!"],
        "ask": "When did {who} do the {v}?",
    },
    {
        "key": "author",
        "kind": "name",
        "values": [
            "Ursula Le Guin",
            "Kazuo Ishiguro",
            "Toni Morrison",
            "Italo Calvino",
            "Octavia Butler",
        ],
        "says": [
            "Honestly nobody writes like {v}, I've read every one of those books twice.",
            "I'm rereading {v} again, still the best novelist there is in my opinion.",
        ],
        "ask": "Who is {who}'s favourite writer?",
    },
    {
        "key": "language",
        "kind": "fact",
        "values": ["Portuguese", "Finnish", "Swahili", "Korean", "Icelandic"],
        "says": [
            "I signed up for evening classes in {v} at the community college.",
            "Three weeks into my {v} course and I can order coffee already.",
        ],
        "ask": "Which language is {who} studying?",
    },
    {
        "key": "boss",
        "kind": "name",
        "values": ["Rosalind", "Kwame", "Marguerite", "Ingrid", "Dev"],
        "says": [
            "My new manager, {v}, actually listens, which is a nice change.",
            "The person I report to now is called {v}, and the meetings got shorter.",
        ],
        "ask": "Who is {who}'s boss at work?",
    },
    {
        "key": "play",
        "kind": "fact",
        "values": ["the Tin Man", "Captain Hook", "the Cheshire Cat", "Mary Poppins"],
        "says": ["My daughter got the lead in the school play, she's going to be {v}!"],
        "ask": "What part did {who}'s child get in the school show?",
    },
    {
        "key": "wedding",
        "kind": "date",
        "values": ["June 14th", "September 2nd", "October 21st", "May 30th"],
        "says": ["We've set the date: {v}, in my grandmother's garden."],
        "ask": "When is {who} getting married?",
    },
    {
        "key": "sport",
        "kind": "fact",
        "values": ["volleyball", "rowing", "frisbee", "fencing"],
        "says": ["I joined a {v} club, we meet on Sunday mornings by the lake."],
        "ask": "What sport does {who} play at the weekend?",
    },
    {
        "key": "trip",
        "kind": "fact",
        "values": ["Iceland", "Vietnam", "Morocco", "Patagonia", "Sicily"],
        "says": ["We booked two weeks in {v} for August, I can't wait."],
        "ask": "Where is {who} going on holiday this summer?",
        "update": "We cancelled the August trip and booked {v} instead, it was much cheaper.",
        "ask_update": "What is {who}'s holiday destination now?",
    },
    {
        "key": "gym",
        "kind": "two_turn",
        "values": ["Boulder Barn", "Crux Hall", "The Overhang", "Granite Loft"],
        "setup": "I finally picked a climbing gym to join.",
        "prompt": "Oh nice, which one did you go with?",
        "says": ["{v}, the one by the old train station."],
        "ask": "Where does {who} go bouldering?",
    },
    {
        "key": "podcast",
        "kind": "two_turn",
        "values": ["Tiny Harbour", "Loud Library", "Night Shift Notes", "Second Helpings"],
        "setup": "So I started my own podcast, first episode is out!",
        "prompt": "No way! What is it called?",
        "says": ["It's called {v}, it's about local history."],
        "ask": "What is the name of {who}'s show?",
    },
]

# Plainer wordings that share the question's key word, as LoCoMo's questions often do ("dog" in
# both), and a follow-up exchange (the other speaker asks, the owner answers without the value):
# real talk dwells on news for a few turns. Neither is evidence.
PLAIN = {
    "dog": "We adopted a dog! A scruffy little mutt we named {v}.",
    "city": "We're moving to {v}, we found a place near the river.",
    "job": "I got a job at {v}, starting in two weeks.",
    "instrument": "I'm learning to play the {v}, the neighbours are very patient.",
    "cousin": "My cousin {v} is coming to stay with us next week.",
    "allergy": "I have to avoid {v} now, the allergist was very clear.",
    "car": "I drive a {v} now, the old one finally died.",
    "author": "My favourite writer is {v}, hands down.",
    "language": "I'm studying {v} twice a week now.",
    "boss": "My boss at work is now {v}, and it's a big improvement.",
    "play": "My kid got a part in the school show: {v}!",
    "wedding": "We're getting married on {v}!",
    "sport": "I play {v} every weekend now, it's so much fun.",
    "trip": "Our holiday this summer is {v}, two whole weeks.",
}
FOLLOW = {
    "dog": ("Aww, how old is the little one?", "Ten weeks, and already chewing every shoe."),
    "city": ("That's a big move, are you nervous?", "A bit, but the new place has lots of light."),
    "job": ("What will you be doing there?", "Mostly reports and dashboards for the sales team."),
    "instrument": ("How's it going so far?", "Slowly, but I can play a simple tune already."),
    "cousin": ("Are you going to show them around?", "Yes, the old town and the food market."),
    "allergy": ("Oh no, is it serious?", "Serious enough that I carry an adrenaline pen now."),
    "car": ("Is it nice to drive?", "Very smooth, and it barely uses any fuel."),
    "event": ("How did it feel?", "Exhausting but absolutely worth it."),
    "author": ("Which book should I start with?", "Start with the early ones, they're shorter."),
    "language": ("Is it hard?", "The grammar is tough but the teacher is patient."),
    "boss": ("That makes such a difference.", "It really does, I actually enjoy Mondays now."),
    "play": ("Will there be costumes?", "We're sewing it ourselves, wish me luck."),
    "wedding": (
        "Are you planning a big party?",
        "Just family and close friends, maybe forty people.",
    ),
    "sport": ("Is it competitive?", "Not really, we mostly laugh and get muddy."),
    "trip": ("Have you planned what to see?", "Hiking, beaches and a lot of local food."),
}
for _fact in FACTS:
    if _fact["key"] in PLAIN:
        _fact["says"] = [*_fact["says"], PLAIN[_fact["key"]]]
    if _fact["key"] in FOLLOW:
        _fact["follow"] = FOLLOW[_fact["key"]]

# Chatter: ordinary talk, some on the facts' topics with the same kind of values (hard negatives).
CHATTER = [
    "Did you catch {show} last night? The ending was {adj}.",
    "Work has been {busy} this week, so many meetings.",
    "The weather here has been {weather} all week.",
    "I tried a new {cuisine} place near the station, the food was {adj}.",
    "How was your weekend?",
    "Pretty quiet, mostly {chore}.",
    "Haha, that's so true.",
    "Totally agree with you.",
    "I should really get more sleep.",
    "Same here, honestly.",
    "Any plans for the evening?",
    "Probably just {chore} and an early night.",
    "My neighbour's {pet} barked all night again.",
    "I've always wanted to see {place} one day.",
    "A colleague keeps talking about learning the {instrument}.",
    "Have you ever been to {place}? People say it's stunning.",
    "I read an article about {food} allergies on the train.",
    "My sister is thinking about moving to {city}, not sure she will.",
    "Someone at work just bought a {car}, he won't stop talking about it.",
    "I saw a poster for a {sport} tournament downtown.",
    "That reminds me, I need to call my mum.",
    "Oh, I didn't know that!",
    "What have you been reading lately?",
    "Nothing much, I keep falling asleep after two pages.",
    "The kids have a school trip next week.",
    "Traffic was {adj} this morning.",
    "I'm thinking of repainting the kitchen {colour}.",
    "We finally fixed the leaking tap.",
    "Coffee or tea today?",
    "Tea, always tea.",
    "I need a holiday so badly.",
    "Did you hear about the new {cuisine} bakery?",
    "Let's catch up properly soon.",
]
FILL = {
    "show": ["the quiz show", "the baking contest", "the detective series", "the football"],
    "adj": ["wild", "disappointing", "brilliant", "so slow", "fun"],
    "busy": ["hectic", "quiet", "exhausting", "strange"],
    "weather": ["grey and rainy", "weirdly warm", "windy", "freezing"],
    "cuisine": ["Thai", "Georgian", "Peruvian", "Korean", "Lebanese"],
    "chore": ["laundry", "gardening", "cleaning the flat", "cooking for the week"],
    "pet": ["beagle", "terrier", "puppy", "parrot"],
    "colour": ["sage green", "pale yellow", "dark blue"],
}
# The other fact values double as chatter fillers: a distractor names a city, a car, ...
FILL_FROM_FACTS = {
    "place": "trip",
    "instrument": "instrument",
    "food": "allergy",
    "city": "city",
    "car": "car",
    "sport": "sport",
}
REACTIONS = [
    "That's wonderful news!",
    "Wow, how exciting.",
    "Oh really? Good for you!",
    "I'm so happy for you.",
    "That sounds amazing.",
    "No way, congratulations!",
]
NAMES = [
    ("Caroline", "Melanie"),
    ("Jon", "Gina"),
    ("Audrey", "Andrew"),
    ("Tim", "John"),
    ("Nate", "Joanna"),
    ("Evan", "Sam"),
    ("Calvin", "Dave"),
    ("Maria", "Deborah"),
]


#: How often a chatter line is a topical one (a slot filled from the facts' values or a pet):
#: LoCoMo's talk touches the same topics now and then, not in every other line.
TOPICAL_SHARE = 0.15


def _chatter(rng: random.Random, pack: dict[str, Any]) -> str:
    slots = ["{" + slot + "}" for slot in (*pack["fill_from_facts"], "pet")]
    topical = [t for t in pack["chatter"] if any(slot in t for slot in slots)]
    plain = [t for t in pack["chatter"] if t not in topical]
    template = rng.choice(topical if rng.random() < TOPICAL_SHARE or not plain else plain)
    fills = {k: rng.choice(v) for k, v in pack["fill"].items()}
    for slot, key in pack["fill_from_facts"].items():
        fills[slot] = rng.choice(next(f for f in pack["facts"] if f["key"] == key)["values"])
    return str(template.format(**fills))


#: The English language pack; :mod:`evidence_multilingual` has Chinese and Japanese ones.
ENGLISH: dict[str, Any] = {
    "lang": "en",
    "facts": FACTS,
    "chatter": CHATTER,
    "fill": FILL,
    "fill_from_facts": FILL_FROM_FACTS,
    "reactions": REACTIONS,
    "names": NAMES,
    "greeting": "Hey {name}! Long time no talk.",
    "date_key": "event",
}


@dataclass
class _Plant:
    speaker: int  # 0 or 1
    fact: dict[str, Any]
    value: str
    session: int
    update: bool = False
    ids: list[str] = field(default_factory=list)  # evidence ids, filled when placed
    date: datetime | None = None


def _plants(
    rng: random.Random, facts: list[dict[str, Any]], sessions: int, per_speaker: int
) -> list[_Plant]:
    plants: list[_Plant] = []
    used: dict[str, set[str]] = {}
    for speaker in (0, 1):
        for fact in rng.sample(facts, min(per_speaker, len(facts))):
            taken = used.setdefault(fact["key"], set())
            value = rng.choice([v for v in fact["values"] if v not in taken])
            taken.add(value)
            first = rng.randrange(sessions)
            plants.append(_Plant(speaker, fact, value, first))
            if "update" in fact and first < sessions - 1 and rng.random() < 0.6:
                new = rng.choice([v for v in fact["values"] if v not in taken])
                taken.add(new)
                plants.append(_Plant(speaker, fact, new, rng.randrange(first + 1, sessions), True))
    return plants


def _session(
    rng: random.Random,
    pack: dict[str, Any],
    conv_id: str,
    s: int,
    start: datetime,
    names: tuple[str, str],
    plants: list[_Plant],
) -> tuple[dict[str, Any], ...]:
    n = rng.randint(20, 30)
    first = rng.randrange(2)
    lines: dict[int, str] = {}
    for plant in plants:
        follow = plant.fact.get("follow") if rng.random() < 0.6 else None
        block = 4 if plant.fact["kind"] == "two_turn" else 3 if follow else 2
        free = [
            i
            for i in range(2, n - block + 1)
            if (first + i) % 2 == plant.speaker and all(j not in lines for j in range(i, i + block))
        ]
        if free:
            i = rng.choice(free)
        else:  # the session is full: the fact goes at its end
            i = n + ((first + n) % 2 != plant.speaker)
            n = i + block
        text = plant.fact["update"] if plant.update else rng.choice(plant.fact["says"])
        text = text.format(v=plant.value)
        if block == 4:
            lines[i], lines[i + 1], lines[i + 2] = plant.fact["setup"], plant.fact["prompt"], text
            plant.ids = [f"{conv_id}/{s}/{i}", f"{conv_id}/{s}/{i + 2}"]
            lines[i + 3] = rng.choice(pack["reactions"])
        elif follow:
            lines[i], lines[i + 1], lines[i + 2] = text, follow[0], follow[1]
            plant.ids = [f"{conv_id}/{s}/{i}"]
        else:
            lines[i] = text
            plant.ids = [f"{conv_id}/{s}/{i}"]
            lines[i + 1] = rng.choice(pack["reactions"])
    seen = set(lines.values())
    messages = []
    for i in range(n):
        if i == 0:
            text = pack["greeting"].format(name=names[(first + 1) % 2])
        elif i in lines:
            text = lines[i]
        else:
            text = _chatter(rng, pack)
            for _ in range(5):  # avoid repeating a line within the session
                if text not in seen:
                    break
                text = _chatter(rng, pack)
            seen.add(text)
        when = start + timedelta(minutes=i)
        messages.append(
            {
                "role": "user",
                "name": names[(first + i) % 2],
                "content": text,
                "chat_time": when.strftime("%Y-%m-%d %H:%M"),
                "message_id": f"{conv_id}/{s}/{i}",
            }
        )
    return tuple(messages)


def _question(
    pack: dict[str, Any], conv_id: str, names: tuple[str, str], plant: _Plant, has_update: bool
) -> Question:
    fact, who = plant.fact, names[plant.speaker]
    text = (fact["ask_update"] if has_update else fact["ask"]).format(who=who, v=plant.value)
    kind = "update" if has_update else fact["kind"]
    answer = plant.value
    if fact["kind"] == "date" and fact["key"] == pack["date_key"] and plant.date is not None:
        answer = (plant.date - timedelta(days=1)).strftime("%Y-%m-%d")
    return Question(conv_id, text, tuple(plant.ids), plant.value, answer, kind)


def synthetic_english(*, seed: int = 0, quick: bool = False, tiny: bool = False) -> Dataset:
    """The synthetic LoCoMo-like set (see the module): 6 conversations of 16 sessions, 11 facts
    per speaker; ``quick``: 2 of 5 sessions, 5 facts; ``tiny`` (tests): 1 of 3, 3 facts."""
    sizes = (1, 3, 3) if tiny else (2, 5, 5) if quick else (6, 16, 11)
    return synthetic(ENGLISH, "synthetic-en", sizes, seed=seed, note="LoCoMo-like, paraphrased")


def synthetic(
    pack: dict[str, Any], name: str, sizes: tuple[int, int, int], *, seed: int, note: str
) -> Dataset:
    """Conversations and questions from a language ``pack`` (see :data:`ENGLISH`): ``sizes``
    is (conversations, sessions each, facts per speaker)."""
    convs, sessions, facts = sizes
    rng = random.Random(seed)
    data = Dataset(name, pack["lang"], [], [], note=note)
    for c in range(convs):
        conv_id = f"{pack['lang']}{c}"
        names = pack["names"][c % len(pack["names"])]
        plants = _plants(rng, pack["facts"], sessions, facts)
        when = datetime(2023, 1, 1) + timedelta(days=rng.randrange(300), hours=rng.randrange(9, 20))
        built = []
        for s in range(sessions):
            here = [p for p in plants if p.session == s]
            for p in here:
                p.date = when
            built.append(_session(rng, pack, conv_id, s, when, names, here))
            when += timedelta(days=rng.randint(2, 12), minutes=rng.randrange(-90, 90))
        data.conversations.append(Conversation(conv_id, f"owner-{conv_id}", tuple(built)))
        for plant in plants:
            later = [
                p
                for p in plants
                if p.update and p.speaker == plant.speaker and p.fact["key"] == plant.fact["key"]
            ]
            latest = max(later, key=lambda p: p.session) if later else None
            if latest is None and not plant.update:
                data.questions.append(_question(pack, conv_id, names, plant, False))
            elif plant is latest:
                data.questions.append(_question(pack, conv_id, names, plant, True))
    return data
