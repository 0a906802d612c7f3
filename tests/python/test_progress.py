"""Progress handlers: reports, cancellation (False or uform.Cancelled), and exceptions that reach the
caller instead of being printed and swallowed by ctypes."""

import traceback

import numpy as np
import pytest

import uform


def receivers(model, executor):
    return {
        "calling thread": lambda **kw: model.text_encode(["progress", "reports"], **kw),
        "on(executor)": lambda **kw: model.on(executor).text_encode(["progress", "reports"], **kw),
        "deferred(executor)": lambda **kw: model.deferred(executor).text_encode(["progress", "reports"], **kw).wait(),
    }


def test_reports_end_at_completion(model, executor):
    for name, call in receivers(model, executor).items():
        reports = []
        result = call(progress=lambda done, total: reports.append((done, total)))
        assert reports, name
        assert reports[-1][0] == reports[-1][1], (name, reports)
        assert all(a[0] <= b[0] for a, b in zip(reports, reports[1:])), (name, reports)
        assert result.embeddings.shape[0] == 2
        # True and None both go on.
        assert call(progress=lambda done, total: True).embeddings.shape[0] == 2


@pytest.mark.parametrize("how", ["false", "cancelled"])
def test_cancel(model, executor, how):
    expected = model.on(executor).text_encode(["progress", "reports"]).embeddings
    for name, call in receivers(model, executor).items():
        seen = []

        def handler(done, total):
            seen.append(done)
            if how == "false":
                return False
            raise uform.Cancelled()

        with pytest.raises(uform.Cancelled) as caught:
            call(progress=handler)
        assert caught.value.status == uform.Status.CANCELLED, name
        assert caught.value.function == "uform_text_encode", (name, caught.value.function)
        assert len(seen) == 1, (name, seen)
        # The model, executor and arenas stay usable.
        again = model.on(executor).text_encode(["progress", "reports"]).embeddings
        assert np.array_equal(again, expected), name


class Boom(Exception):
    pass


def test_exceptions_in_handlers_reach_the_caller(model, executor):
    for name, call in receivers(model, executor).items():
        def handler(done, total):
            raise Boom(f"from the handler ({name})")

        with pytest.raises(Boom, match="from the handler") as caught:
            call(progress=handler)
        frames = [frame.name for frame in traceback.extract_tb(caught.value.__traceback__)]
        assert "handler" in frames, (name, frames)  # the handler's own frame, not a copy
        assert model.text_encode("still works").embeddings.shape[0] == 1


def test_a_library_error_inside_a_handler_reaches_the_caller(model, executor):
    # Draining an executor from inside a call on it would wait for itself: the library refuses, and
    # that refusal, raised inside the handler, is what the caller sees.
    def handler(done, total):
        executor.drain()

    with pytest.raises(uform.InvalidArgument) as caught:
        model.deferred(executor).text_encode("drain inside", progress=handler).wait()
    assert caught.value.function == "uform_executor_drain", caught.value.function


def test_bad_handler_answers_cancel_and_reach_the_caller(model):
    with pytest.raises(ValueError, match="ambiguous"):
        model.text_encode("x", progress=lambda done, total: np.array([True, False]))
