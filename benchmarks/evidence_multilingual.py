"""Evidence-labelled sets beyond synthetic English, for ``benchmarks/evidence_retrieval.py``:
MemoryBank in English and Chinese, and small synthetic Chinese and Japanese conversations.

**MemoryBank** (``data/memorybank``, real chats of 15 users with an AI companion, one session
per day, MIT) has no questions with evidence, and a day's user turns refer to earlier days only
loosely, so the questions are derived, and say so:

- English (:func:`memorybank_english`): from each user message that names something specific
  (a quoted title, a capitalised name inside a sentence, else its rarest long word, one that
  occurs in at most two of that user's messages), the answer is that string and the question
  is a **keyword query**: the message's other most distinctive words (up to six, by how rare
  they are in the user's history, in the message's order), the answer left out. The evidence
  is every message of that user (either role) that contains the answer.
- Chinese (:func:`memorybank_chinese`): from each user message that names a title or quote
  (《…》, “…”), the answer is the name and the question the clause before it, the name cut
  out; from every other user message of 12 CJK characters or more, the question is the
  message's longest clause and the evidence every message that contains it (a **clause
  lookup**). Both drop the clause's first two characters and its last, so a query is never a
  whole run between punctuation marks (which the default full-text tokenizer would match as one
  token): it has to be found inside the text, as a person's search would.

What they measure: finding one real message among a user's 60-150 by its distinctive words
(English) or an exact clause (Chinese: this is mostly a test of full-text search on CJK text),
and whether a budget holds a whole real message (some are long). Their limit: the query copies
the message's own words, so search recall overstates what paraphrased questions would get.

**Synthetic Chinese and Japanese** (:func:`synthetic_cjk`): the English generator's shape
(:mod:`evidence_data`) with smaller catalogs written in each language: paraphrased questions,
names, dates, updates, chatter on the same topics.

>>> zh = synthetic_cjk("zh", seed=0, tiny=True)
>>> q = zh.questions[0]
>>> q.fact in zh.message(q.evidence[-1])["content"]
True
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

from evidence_data import Conversation, Dataset, Question, synthetic

__all__ = ["memorybank_chinese", "memorybank_english", "synthetic_cjk"]

ROOT = Path(__file__).resolve().parents[1]
MEMORYBANK = ROOT / "data" / "memorybank"

# -- MemoryBank ------------------------------------------------------------------------------------


def _conversations(path: Path, prefix: str, users: int | None) -> list[tuple[str, Conversation]]:
    """Each user's days as one conversation (user name, conversation); ``users`` caps them."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for u, (key, record) in enumerate(list(raw.items())[:users]):
        conv_id = f"{prefix}{u}"
        sessions = []
        for s, (day, pairs) in enumerate(record["history"].items()):
            messages = []
            for pair in pairs:
                for role, field in (("user", "query"), ("assistant", "response")):
                    i = len(messages)
                    messages.append(
                        {
                            "role": role,
                            "content": pair[field],
                            "chat_time": day,
                            "message_id": f"{conv_id}/{s}/{i}",
                        }
                    )
            if messages:  # a day without pairs is no session (as memorybank_scenes reads it)
                sessions.append(tuple(messages))
        out.append(
            (
                str(record.get("name") or key).strip(),
                Conversation(conv_id, f"owner-{conv_id}", tuple(sessions)),
            )
        )
    return out


def _messages(conv: Conversation) -> list[dict[str, Any]]:
    return [m for session in conv.sessions for m in session]


STOP = set(
    """a an the and or but if then so to of in on at for with from by about as is are was
were be been being am i me my mine we our you your he she it its they them their this that these
those there here what which who whom how when where why do does did done have has had having not
no yes can could would should will shall may might must just really very also too more most much
many some any all each every other such only own same than into over under again further once
hello hi thank thanks okay ok sure well like feel think know want going get got make made
today yesterday recently lately always often still even though because while after before
something anything everything nothing someone things thing lot little good great nice""".split()  # noqa: SIM905
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_QUOTED = re.compile(r"[\"“]([^\"”]{3,60}?)[,.?!]?[\"”]")
_CAPITALISED = re.compile(r"(?<=[a-z,] )([A-Z][a-z]+(?: (?:of |the )?[A-Z][a-z]+)+)")


def _specific(text: str, name: str, df: Counter[str]) -> str | None:
    """What a question about ``text`` asks for: a quoted title, a capitalised name, else the
    rarest long word (in at most two of the user's messages)."""
    for pattern in (_QUOTED, _CAPITALISED):
        for match in pattern.findall(text):
            if name.lower() not in match.lower() and len(match) >= 4:
                return str(match)
    # -ed, -ing and -ly words are rarely what a question asks for ("learned", "tasting").
    words = [
        w
        for w in _WORD.findall(text)
        if len(w) >= 6 and w.lower() not in STOP and not w.lower().endswith(("ed", "ing", "ly"))
    ]
    rare = [w for w in words if df[w.lower()] <= 2]
    return min(rare, key=lambda w: (df[w.lower()], -len(w))) if rare else None


def memorybank_english(*, users: int | None = None, path: Path | None = None) -> Dataset:
    """MemoryBank English with keyword queries (see the module); ``users`` caps the users."""
    data = Dataset("memorybank-en", "en", [], [], note="real chats, keyword queries")
    for name, conv in _conversations(path or MEMORYBANK / "memory_bank_en.json", "mben", users):
        data.conversations.append(conv)
        messages = _messages(conv)
        df: Counter[str] = Counter()
        for m in messages:
            df.update({w.lower() for w in _WORD.findall(m["content"])})
        asked: set[str] = set()
        for m in messages:
            if m["role"] != "user" or len(_WORD.findall(m["content"])) < 8:
                continue
            answer = _specific(m["content"], name, df)
            if answer is None or answer.lower() in asked:
                continue
            asked.add(answer.lower())
            left_out = {w.lower() for w in _WORD.findall(answer)}
            words = [
                w
                for w in _WORD.findall(m["content"])
                if w.lower() not in STOP | left_out and len(w) > 2
            ]
            keep = sorted(set(w.lower() for w in words), key=lambda w: (df[w], w))[:6]
            query = " ".join(dict.fromkeys(w for w in words if w.lower() in keep))
            if len(query.split()) < 3:
                continue
            evidence = [x["message_id"] for x in messages if answer.lower() in x["content"].lower()]
            evidence.sort(key=lambda e: e == m["message_id"])  # the asked message last
            data.questions.append(
                Question(conv.conv_id, query, tuple(evidence), answer, answer, "keyword")
            )
    return data


_TITLE = re.compile(r"《([^》]{2,30})》|“([^”]{2,30})”")
_CLAUSE = re.compile(r"[，。！？；：、,.!?;:\s]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


def memorybank_chinese(*, users: int | None = None, path: Path | None = None) -> Dataset:
    """MemoryBank Chinese with title and clause questions (see the module)."""
    data = Dataset("memorybank-cn", "zh", [], [], note="real chats, clause lookups")
    for _name, conv in _conversations(path or MEMORYBANK / "memory_bank_cn.json", "mbcn", users):
        data.conversations.append(conv)
        messages = _messages(conv)
        asked: set[str] = set()
        for m in messages:
            text = m["content"]
            if m["role"] != "user" or len(_CJK.findall(text)) < 12:
                continue
            title = _TITLE.search(text)
            if title is not None:
                answer = title.group(1) or title.group(2)
                before = [c for c in _CLAUSE.split(text[: title.start()]) if c]
                query = before[-1] if before else ""
                kind = "title"
            else:
                clauses = [c for c in _CLAUSE.split(text) if len(_CJK.findall(c)) >= 8]
                answer = query = max(clauses, key=len) if clauses else ""
                kind = "clause"
            # Trimmed, so the query is never a whole punctuation-delimited run: SQLite FTS5's
            # default tokenizer takes such a run as one token, and an exact run would find it.
            query = query[2:-1]
            if len(_CJK.findall(query)) < 4 or answer in asked:
                continue
            asked.add(answer)
            evidence = [x["message_id"] for x in messages if answer in x["content"]]
            if kind == "clause" and len(evidence) > 2:
                continue  # a stock phrase ("谢谢你的推荐"), not a lookup of one message
            evidence.sort(key=lambda e: e == m["message_id"])  # the asked message last
            data.questions.append(
                Question(conv.conv_id, query, tuple(evidence), answer, answer, kind)
            )
    return data


# -- synthetic Chinese and Japanese ----------------------------------------------------------------

ZH_FACTS: list[dict[str, Any]] = [
    {
        "key": "dog",
        "kind": "name",
        "values": ["豆豆", "旺财", "年糕", "可乐", "球球"],
        "says": ["上周末我们终于把一只小柯基抱回家了，孩子们给它起名叫{v}。"],
        "ask": "{who}家的狗叫什么名字？",
    },
    {
        "key": "city",
        "kind": "fact",
        "values": ["成都", "厦门", "青岛", "昆明", "苏州", "西安"],
        "says": ["我们刚在{v}签了房子的租约，下个月就搬过去。"],
        "ask": "{who}要搬到哪座城市？",
        "update": "计划有变，那边的房子黄了，我们改成去{v}了。",
        "ask_update": "{who}最后要搬去哪里？",
    },
    {
        "key": "instrument",
        "kind": "fact",
        "values": ["大提琴", "古筝", "萨克斯", "二胡", "尤克里里"],
        "says": ["我每周四晚上都去上{v}课，手指都磨疼了！"],
        "ask": "{who}在学什么乐器？",
    },
    {
        "key": "allergy",
        "kind": "fact",
        "values": ["花生", "海鲜", "芒果", "芝麻"],
        "says": ["医生确认了，我对{v}过敏，以后再也不能碰了。"],
        "ask": "{who}因为健康原因不能吃什么？",
    },
    {
        "key": "job",
        "kind": "fact",
        "values": ["华星科技", "蓝海物流", "青禾传媒", "远山医疗"],
        "says": ["我接受了{v}的数据分析师职位，下周一入职。"],
        "ask": "{who}在哪家公司上班？",
        "update": "告诉你个消息，我已经离职了，现在在{v}当团队负责人。",
        "ask_update": "{who}现在的雇主是谁？",
    },
    {
        "key": "cousin",
        "kind": "name",
        "values": ["王小雨", "陈浩", "刘思远", "赵敏"],
        "says": ["我表妹{v}周五坐飞机过来，要在我们家住一个星期。"],
        "ask": "哪位亲戚要来{who}家住？",
    },
    {
        "key": "event",
        "kind": "date",
        "values": ["半程马拉松", "跳伞", "驾照考试", "陶艺课"],
        "says": ["我昨天第一次完成了{v}，现在还很兴奋！"],
        "ask": "{who}是什么时候参加{v}的？",
    },
    {
        "key": "trip",
        "kind": "fact",
        "values": ["冰岛", "越南", "摩洛哥", "新西兰"],
        "says": ["我们订好了八月去{v}玩两个星期，太期待了。"],
        "ask": "{who}今年夏天去哪里度假？",
    },
]
ZH = {
    "lang": "zh",
    "facts": ZH_FACTS,
    "chatter": [
        "昨晚你看{show}了吗？结局太{adj}了。",
        "这周工作好{busy}，开了好多会。",
        "这边天气一直{weather}。",
        "我去车站附近新开的{cuisine}馆吃了，味道{adj}。",
        "周末过得怎么样？",
        "挺安静的，主要在{chore}。",
        "哈哈，说得太对了。",
        "我邻居家的{pet}又叫了一整晚。",
        "我一直想去{place}看看。",
        "同事一直说想学{instrument}。",
        "我妹妹在考虑搬到{city}，不知道会不会去。",
        "我在地铁上看了一篇关于{food}过敏的文章。",
        "我得早点睡觉了。",
        "我也是，真的。",
        "今天喝咖啡还是喝茶？",
        "我真的太需要一个假期了。",
        "改天好好聊聊吧。",
    ],
    "fill": {
        "show": ["那个综艺", "烘焙比赛", "侦探剧"],
        "adj": ["精彩", "失望", "好笑"],
        "busy": ["忙", "累", "乱"],
        "weather": ["阴雨绵绵", "特别热", "刮大风"],
        "cuisine": ["泰国菜", "川菜", "韩国料理"],
        "chore": ["洗衣服", "打扫房间", "做饭"],
        "pet": ["柯基", "小狗", "鹦鹉"],
    },
    "fill_from_facts": {
        "place": "trip",
        "instrument": "instrument",
        "city": "city",
        "food": "allergy",
    },
    "reactions": ["太好了！", "哇，真让人激动。", "真的吗？替你高兴！", "恭喜恭喜！"],
    "names": [("李娜", "王磊"), ("张伟", "刘洋")],
    "greeting": "嗨，{name}！好久没聊了。",
    "date_key": "event",
}
JA_FACTS: list[dict[str, Any]] = [
    {
        "key": "dog",
        "kind": "name",
        "values": ["ポチ", "モモ", "コタロウ", "ハナ"],
        "says": ["先週末ついに柴犬の子犬を家に迎えて、子どもたちが{v}と名付けました。"],
        "ask": "{who}さんの犬の名前は何ですか？",
    },
    {
        "key": "city",
        "kind": "fact",
        "values": ["札幌", "福岡", "仙台", "金沢", "神戸"],
        "says": ["{v}のマンションの契約をしたので、来月引っ越します。"],
        "ask": "{who}さんはどの街に移り住みますか？",
        "update": "予定が変わって、あの部屋はだめになったので{v}に行くことにしました。",
        "ask_update": "{who}さんは結局どこへ引っ越しますか？",
    },
    {
        "key": "instrument",
        "kind": "fact",
        "values": ["チェロ", "三味線", "サックス", "ウクレレ"],
        "says": ["毎週木曜の夜に{v}のレッスンに通っていて、指が痛いです！"],
        "ask": "{who}さんが習っている楽器は何ですか？",
    },
    {
        "key": "allergy",
        "kind": "fact",
        "values": ["ピーナッツ", "えび", "そば", "キウイ"],
        "says": ["お医者さんに{v}のアレルギーだと言われたので、もう食べられません。"],
        "ask": "{who}さんが健康上の理由で避けている食べ物は？",
    },
    {
        "key": "job",
        "kind": "fact",
        "values": ["青葉商事", "星野システム", "みなと物流", "桜井製作所"],
        "says": ["{v}でデータアナリストとして働くことになって、月曜から出社します。"],
        "ask": "{who}さんの勤め先はどこですか？",
    },
    {
        "key": "event",
        "kind": "date",
        "values": ["ハーフマラソン", "スカイダイビング", "陶芸教室"],
        "says": ["昨日はじめて{v}に挑戦して、まだ興奮しています！"],
        "ask": "{who}さんが{v}をしたのはいつですか？",
    },
    {
        "key": "trip",
        "kind": "fact",
        "values": ["アイスランド", "ベトナム", "モロッコ", "ニュージーランド"],
        "says": ["八月に{v}へ二週間行く予約を取りました、楽しみです。"],
        "ask": "{who}さんの夏休みの旅行先はどこですか？",
    },
]
JA = {
    "lang": "ja",
    "facts": JA_FACTS,
    "chatter": [
        "昨日の{show}見ました？最後が{adj}でした。",
        "今週は仕事が{busy}、会議ばかりです。",
        "こちらはずっと{weather}です。",
        "駅の近くの{cuisine}の店に行ったら{adj}でした。",
        "週末はどうでした？",
        "のんびり{chore}をしていました。",
        "ほんとにそうですね。",
        "隣の家の{pet}が一晩中鳴いていました。",
        "いつか{place}に行ってみたいです。",
        "同僚が{instrument}を習いたいとずっと言っています。",
        "そろそろ早く寝ないと。",
        "コーヒーとお茶、どっちにします？",
        "休みがほしいです。",
        "また今度ゆっくり話しましょう。",
    ],
    "fill": {
        "show": ["クイズ番組", "ドラマ", "サッカー"],
        "adj": ["最高", "残念", "面白かった"],
        "busy": ["忙しくて", "大変で"],
        "weather": ["雨", "暑い", "風が強い"],
        "cuisine": ["タイ料理", "韓国料理", "ラーメン"],
        "chore": ["洗濯", "掃除", "料理"],
        "pet": ["柴犬", "子犬", "インコ"],
    },
    "fill_from_facts": {"place": "trip", "instrument": "instrument"},
    "reactions": ["すごい、おめでとう！", "いいですね！", "本当に？よかったですね。"],
    "names": [("佐藤", "田中"), ("鈴木", "高橋")],
    "greeting": "{name}さん、お久しぶりです！",
    "date_key": "event",
}


def synthetic_cjk(lang: str, *, seed: int = 0, quick: bool = False, tiny: bool = False) -> Dataset:
    """Synthetic Chinese (``zh``) or Japanese (``ja``) conversations: 2 of 8 sessions, 6 facts
    per speaker; ``quick``: 1 of 4, 4 facts; ``tiny``: 1 of 2, 2 facts."""
    pack = {"zh": ZH, "ja": JA}[lang]
    sizes = (1, 2, 2) if tiny else (1, 4, 4) if quick else (2, 8, 6)
    return synthetic(pack, f"synthetic-{lang}", sizes, seed=seed, note="paraphrased, CJK")


def _check() -> (
    None
):  # a quick look at the derived sets: python benchmarks/evidence_multilingual.py
    for data in (
        memorybank_english(),
        memorybank_chinese(),
        synthetic_cjk("zh"),
        synthetic_cjk("ja"),
    ):
        kinds = Counter(q.kind for q in data.questions)
        print(
            data.name,
            len(data.questions),
            dict(kinds),
            math.fsum(len(q.evidence) for q in data.questions) / max(1, len(data.questions)),
        )
        for q in data.questions[:6]:
            print(
                "  ",
                q.text,
                "|",
                q.answer,
                "|",
                [data.message(e)["content"][:60] for e in q.evidence],
            )


if __name__ == "__main__":
    _check()
