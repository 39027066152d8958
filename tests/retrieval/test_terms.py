"""The terms a full-text search matches (memreader.retrieval.terms): folding (NFKC, case),
Chinese, Japanese and Korean cut into bigrams, and the promise both stores rely on: the terms
of any piece of a text are among the terms the text is indexed by (a one-character CJK term
as the prefix of one of them)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memreader.retrieval.terms import (
    fold,
    index_terms,
    index_text,
    is_cjk,
    is_single_cjk,
    term_stream,
    text_terms,
)


def test_fold_is_nfkc_and_case_folding() -> None:
    assert fold("ＰＯＲＴＯ") == "porto"
    assert fold("ｶﾌｪ") == "カフェ"  # half-width katakana, the voiced mark composed
    assert fold("Straße") == "strasse"
    assert fold("①") == "1"


def test_latin_words_are_words() -> None:
    assert text_terms("Ana moved to Porto, then to PORTO again!") == [
        "ana",
        "moved",
        "to",
        "porto",
        "then",
        "again",
    ]
    assert text_terms("?! --") == [] and index_text("") == ""


def test_cjk_runs_are_bigrams_and_one_character_stays_a_term() -> None:
    assert text_terms("咖啡") == ["咖啡"]
    assert text_terms("茶") == ["茶"]
    assert text_terms("我喜欢喝咖啡，你呢") == ["我喜", "喜欢", "欢喝", "喝咖", "咖啡", "你呢"]
    assert text_terms("コーヒーを飲む") == ["コー", "ーヒ", "ヒー", "ーを", "を飲", "飲む"]
    assert text_terms("커피를 마셔요") == ["커피", "피를", "마셔", "셔요"]


def test_mixed_runs_split_at_the_script_change() -> None:
    assert text_terms("我在Porto喝咖啡") == ["我在", "porto", "喝咖", "咖啡"]
    assert text_terms("2024年3月") == ["2024", "年", "3", "月"]


def test_index_terms_keep_repeats_and_each_runs_last_character() -> None:
    assert term_stream("tea, Tea, TEA") == ["tea", "tea", "tea"]
    assert text_terms("tea, Tea, TEA") == ["tea"]
    assert index_terms("咖啡 咖啡") == ["咖啡", "啡", "咖啡", "啡"]
    assert index_terms("猫") == ["猫"]  # a one-character run is its own term already
    assert index_text("Ana 喝咖啡") == "ana 喝咖 咖啡 啡"


def test_is_single_cjk() -> None:
    assert is_single_cjk("猫") and is_single_cjk("の") and is_single_cjk("커")
    assert not is_single_cjk("a") and not is_single_cjk("猫咪") and not is_single_cjk("")
    assert is_cjk("猫") and not is_cjk("é")


#: Hiragana, katakana, the main Han block, Hangul syllables, Latin letters, digits, a space
#: and punctuation between them.
_TEXT = st.text(
    st.one_of(
        [
            st.characters(min_codepoint=low, max_codepoint=high)
            for low, high in (
                (0x3041, 0x3096),
                (0x30A1, 0x30FC),
                (0x4E00, 0x9FFF),
                (0xAC00, 0xD7A3),
                (0x41, 0x5A),
                (0x30, 0x39),
            )
        ]
        + [st.sampled_from(" ，。!")]
    ),
    max_size=40,
)


@settings(max_examples=300)
@given(text=_TEXT, data=st.data())
def test_the_terms_of_any_cjk_piece_are_indexed_terms_of_the_text(
    text: str, data: st.DataObject
) -> None:
    """What makes a substring search work on both stores: every term of a piece of a CJK run
    is an indexed term (bigrams), or a one-character term that starts or is one."""
    runs = [run for run in _cjk_runs(text) if run]
    if not runs:
        return
    run = data.draw(st.sampled_from(runs))
    start = data.draw(st.integers(0, len(run) - 1))
    piece = run[start : data.draw(st.integers(start + 1, len(run)))]
    indexed = set(index_terms(text))
    for term in text_terms(piece):
        if is_single_cjk(term):
            assert any(t.startswith(term) for t in indexed), (term, indexed)
        else:
            assert term in indexed, (term, indexed)


def _cjk_runs(text: str) -> list[str]:
    runs, run = [], ""
    for char in fold(text):
        if is_cjk(char):
            run += char
        else:
            runs.append(run)
            run = ""
    return [*runs, run]
