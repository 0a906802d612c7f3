"""Zero-copy where promised, owned arrays where not, and the stale-view rule."""

import ctypes
import weakref

import numpy as np
import pytest

import uform
from uform import _inputs, _library


def address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def c_row(matrix, row=0) -> int:
    """The address the C accessor uform_matrix_row answers for a row of a view."""
    pointer = ctypes.c_void_p()
    status = _library.lib.uform_matrix_row(ctypes.addressof(matrix), row, ctypes.byref(pointer))
    assert status == 0, f"uform_matrix_row answered {status}"
    return pointer.value


def test_arena_results_are_views_into_the_arena(model, executor):
    with uform.Arena(executor) as arena:
        result = model.on(executor).text_encode(["one", "two"], outputs=["embeddings", "token_vectors", "states"],
                                                arena=arena)
        assert result.is_view
        raw = result._raw
        embeddings, tokens, states = result.embeddings, result.token_vectors, result.states
        assert address(embeddings) == c_row(raw.embeddings), (address(embeddings), c_row(raw.embeddings))
        assert address(embeddings[1]) == c_row(raw.embeddings, 1)
        assert address(tokens.values) == c_row(raw.token_vectors.matrix)
        assert address(states.values) == c_row(raw.states.matrix)
        assert address(tokens.offsets) == raw.token_vectors.offsets
        for array in (embeddings, tokens.values, tokens.offsets, states.values):
            assert not array.flags.owndata and not array.flags.writeable
        chosen = model.text_choose(["a"], ["xyz"], arena=arena)
        assert address(chosen.probabilities.values) == c_row(chosen._raw.matrix)


def test_stale_views_raise(model, executor):
    with uform.Arena() as arena:
        first = model.text_encode(["stale"], outputs=["embeddings", "token_vectors", "states"], arena=arena)
        tokens = first.token_vectors
        assert first.embeddings.shape[0] == 1 and len(tokens[0]) > 0
        generation = arena.generation
        model.text_encode(["fresh"], arena=arena)
        assert arena.generation == generation + 1
        for accessor in ("embeddings", "token_vectors", "states"):
            with pytest.raises(uform.InvalidArgument, match="stale view") as caught:
                getattr(first, accessor)
            assert caught.value.function == f"Encoded.{accessor}", caught.value.function
        for touch in (lambda: tokens.values, lambda: tokens.offsets, lambda: tokens[0], lambda: list(tokens)):
            with pytest.raises(uform.InvalidArgument, match="stale view"):
                touch()
        chosen = model.text_choose(["a"], ["bc"], arena=arena)
        assert chosen.probabilities[0].shape == (2,)
    with pytest.raises(uform.InvalidArgument, match="arena was closed"):
        chosen.probabilities
    with pytest.raises(uform.InvalidArgument, match="the arena is closed"):
        model.text_encode("x", arena=arena)


def test_owned_results_survive_later_calls(model, executor):
    first = model.on(executor).text_encode(["owned"], outputs=["embeddings", "token_vectors"])
    kept = first.embeddings.copy()
    assert not first.is_view and first._raw is None
    assert first.embeddings.flags.owndata and first.embeddings.flags.writeable
    assert first.token_vectors.values.flags.owndata
    second = model.on(executor).text_encode(["other"], outputs=["embeddings", "token_vectors"])
    assert address(first.embeddings) != address(second.embeddings)
    assert np.array_equal(first.embeddings, kept), "an owned array changed after a later call"
    assert first.token_vectors[0].shape[1] == kept.shape[1]


def test_reused_requests_follow_the_model(model, description, executor):
    """A batch-1 text reuses a request of its executor and the view of where its embedding lay last;
    a model of another width on the same executor moves that, and every answer still equals the
    general path's, owned and writable (writing it changes no later answer)."""
    wide, thin = description.embedding, 32 if description.embedding != 32 else 16
    with uform.Trainer.init_ram(None, seed=1, embedding=thin, matryoshka=[thin]) as trainer:
        with trainer.snapshot() as narrow:
            for _ in range(3):
                for receiver, width in ((model, wide), (narrow, thin), (model.on(executor), wide), (narrow.on(executor), thin)):
                    one = receiver.text_encode("follow the model").embeddings
                    listed = receiver.text_encode(["follow the model"]).embeddings
                    assert one.shape == (1, width) == listed.shape, (one.shape, listed.shape, width)
                    assert np.array_equal(one, listed), (one, listed)
                    assert one.flags.owndata and one.flags.writeable
                    one[:] = 0


def test_batch_one_views_on_a_reused_request(model):
    """text_encode(str, arena=...) runs on a request the arena keeps for reuse: each result keeps its
    own C views (_raw), goes stale with the arena's next call, and an array taken from it keeps the
    arena alive, which is freed as soon as nothing uses it (no reference cycle through the request)."""
    arena = uform.Arena()
    first = model.text_encode("first", arena=arena)
    generation = first._raw.embeddings.generation
    assert generation == arena.generation
    assert address(first.embeddings) == c_row(first._raw.embeddings)
    assert np.array_equal(first.embeddings, model.text_encode("first").embeddings)
    second = model.text_encode("second", arena=arena)
    assert first._raw.embeddings.generation == generation == second._raw.embeddings.generation - 1
    with pytest.raises(uform.InvalidArgument, match="stale view"):
        first.embeddings
    expected = model.text_encode("second").embeddings
    kept = second.embeddings
    assert np.array_equal(kept, expected) and not kept.flags.writeable
    alive = weakref.ref(arena)
    del first, second, arena
    assert alive() is not None, "a view no longer keeps its arena alive"
    assert np.array_equal(kept, expected)
    del kept
    assert alive() is None, "the arena outlived its last view (a reference cycle)"


def test_deferred_calls_fill_their_arena(model, executor):
    with uform.Arena(executor) as arena:
        pending = model.deferred(executor).text_encode(["deferred view"], arena=arena)
        result = pending.wait()
        assert result.is_view and result.embeddings.shape[0] == 1


def test_an_arena_held_by_a_deferred_call_is_contended(model, executor):
    import threading

    opened, entered = threading.Event(), threading.Event()

    def hold(completed, total):
        entered.set()
        opened.wait(timeout=60)

    with uform.Arena(executor) as arena:
        pending = model.deferred(executor).text_encode("holder", arena=arena, progress=hold)
        try:
            assert entered.wait(timeout=30)
            with pytest.raises(uform.Contended):
                model.text_encode("other thread, same arena", arena=arena)  # calling thread: only the arena is busy
        finally:
            opened.set()
        assert pending.wait().embeddings.shape[0] == 1


def test_contiguous_inputs_cross_without_a_copy():
    batch = np.zeros((3, 16, 24, 3), np.uint8)
    tape, heights, widths = _inputs.pixels(batch, "test")
    assert tape.data == address(batch) and tape.count == 3, (tape.data, address(batch))
    assert list(heights) == [16, 16, 16] and list(widths) == [24, 24, 24]
    one = np.zeros((10, 12, 3), np.uint8)
    assert _inputs.pixels(one, "test")[0].data == address(one)
    recordings = np.zeros((2, 800), np.float32)
    tape = _inputs.samples(recordings, "test")
    assert tape.data == address(recordings) and tape.count == 2
    text = b"passed as it lies"
    assert _inputs.texts(text, "test").data is text
    # Separate objects are joined into one buffer: the one copy the binding makes.
    joined = _inputs.pixels([one, one], "test")[0]
    assert joined.data != address(one) and joined.count == 2


def test_bf16_and_b1_scalars(model):
    full = model.text_encode(["scalars"], outputs=["embeddings", "token_vectors"])
    bf16 = model.text_encode(["scalars"], scalar="bf16")
    widened = uform.bfloat16_to_float32(bf16.embeddings)
    assert bf16.embeddings.dtype == np.uint16 and widened.dtype == np.float32
    np.testing.assert_allclose(widened, full.embeddings, rtol=1 / 128, atol=1e-3)
    b1 = model.text_encode(["scalars"], scalar="b1")
    bits = np.unpackbits(b1.embeddings, axis=1)[:, : full.embeddings.shape[1]]
    assert np.array_equal(bits.astype(bool), full.embeddings > 0), (bits, full.embeddings > 0)
    assert np.array_equal(full.token_vectors[0][0], full.embeddings[0]), "the CLS token vector is the embedding"


def test_stats_describe_the_call(model):
    texts = ["one", "three words here", ""]
    result = model.text_encode(texts, outputs=["embeddings", "token_vectors"], stats=True)
    stats = result.stats
    assert stats.items == 3 and stats.input_bytes == sum(len(t) for t in texts), stats
    assert stats.tokens == result.token_vectors.offsets[-1] == sum(len(t) + 1 for t in texts), stats
    assert stats.flops > 0 and stats.compute_seconds >= 0 and stats.arena_bytes > 0, stats
    assert model.text_encode("no stats").stats is None
