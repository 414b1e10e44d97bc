"""``scripts/latent_terms.py``: the fusions it compares, and the regulars' pools it ranks."""

from __future__ import annotations

import numpy as np

from memory.eval import regulars
from memory.spaces import lexical
from scripts import latent_terms


def test_fusion_ranks_first_what_every_ranking_ranks_high() -> None:
    # 2 is first in two rankings of three; 0 is missing from one and still ranked
    assert latent_terms.fusion([0, 2, 1], [2, 1], [2, 0, 1])[0] == 2
    assert sorted(latent_terms.fusion([0, 2, 1], [2, 1])) == [0, 1, 2]


def test_the_search_counts_bm25_as_the_store_does_and_only_its_matches() -> None:
    dense = np.array([0.9, 0.8, 0.7])
    terms = np.array([0.0, 1.0, 2.0])
    nothing = latent_terms.rankings(dense, np.zeros(3), terms)
    assert nothing["search"] == nothing["dense"] == [0, 1, 2]  # no word in common: dense alone
    assert nothing["latent"] == [2, 1, 0]
    # one BM25 match counted SPARSE_COPIES times outweighs the dense order's first place
    matched = latent_terms.rankings(dense, np.array([0.0, 0.0, 3.0]), terms)
    assert lexical.SPARSE_COPIES > 1 and matched["search"][0] == 2
    assert matched["search+latent"][0] == 2


def test_a_regulars_pool_is_the_viewers_statements_not_their_questions() -> None:
    corpus = regulars.load()
    pools = latent_terms.regulars_pools(corpus)
    assert pools.regulars is not None
    assert len(pools.questions) == len(corpus.questions) >= 48
    asked = {q.id for q in corpus.questions}
    logins = {user_id: login for login, (user_id, _) in corpus.viewers.items()}
    for question in pools.questions:
        about = corpus.viewers[pools.regulars[question.probe.message_id].about][0]
        assert question.pool and {e.user_id for e in question.pool} == {about}
        assert not asked & {e.id for e in question.pool}, logins[about]
        assert set(question.probe.evidence_ids) <= {e.id for e in question.pool}
