"""Receivers: the calling thread, blocking on an executor, deferred calls; contention, ordering,
the GIL, and closing or dropping what a deferred call still uses."""

import faulthandler
import sys
import threading

import numpy as np
import pytest

import uform


@pytest.fixture(autouse=True)
def no_hang():
    """A deadlock (a GIL held while waiting) fails the test instead of hanging CTest."""
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


class Gate:
    """A progress handler that holds its call inside the executor until opened."""

    def __init__(self):
        self.entered, self.opened, self.finished = threading.Event(), threading.Event(), threading.Event()

    def __call__(self, completed, total):
        self.entered.set()
        if not self.opened.wait(timeout=60):
            raise AssertionError("the gate was never opened")
        if completed == total:
            self.finished.set()


def test_receivers_answer_the_same(model, executor):
    texts = ["receivers", "agree"]
    here = model.text_encode(texts)
    there = model.on(executor).text_encode(texts)
    later = model.deferred(executor).text_encode(texts).wait()
    inline = model.deferred(uform.Executor()).text_encode(texts)
    assert inline.done(), "a deferred call on the calling thread is final when it returns"
    # Same executor kind, same thread count: bit-identical; the calling thread may round differently.
    assert np.array_equal(there.embeddings, later.embeddings), (there.embeddings, later.embeddings)
    assert np.array_equal(here.embeddings, inline.wait().embeddings)
    np.testing.assert_allclose(here.embeddings, there.embeddings, rtol=1e-4, atol=1e-5)


def test_blocking_on_a_busy_executor_is_contended(model, executor):
    gate = Gate()
    pending = model.deferred(executor).text_encode("holds the executor", progress=gate)
    try:
        assert gate.entered.wait(timeout=30), "the deferred call never started"
        assert pending.status() == uform.Status.DEFERRED and not pending.done()
        with pytest.raises(uform.Contended) as caught:
            model.on(executor).text_encode("blocked")
        assert caught.value.status == uform.Status.CONTENDED
        assert caught.value.function == "uform_text_encode", caught.value.function
        assert "running another call" in caught.value.message, caught.value.message
        assert str(caught.value).startswith("UForm: contended [uform_text_encode]: "), str(caught.value)
    finally:
        gate.opened.set()
    assert pending.wait().embeddings.shape[0] == 1
    assert pending.status() == uform.Status.OK and pending.done()
    assert model.on(executor).text_encode("free again").embeddings.shape[0] == 1


def test_a_full_deferred_queue_is_contended(model):
    with uform.Executor.for_ram(threads=1, deferred_limit=1) as small:
        gate = Gate()
        running = model.deferred(small).text_encode("running", progress=gate)
        assert gate.entered.wait(timeout=30)
        queued = model.deferred(small).text_encode("queued")
        with pytest.raises(uform.Contended) as caught:
            model.deferred(small).text_encode("one too many")
        assert "queue is full" in caught.value.message, caught.value.message
        gate.opened.set()
        assert running.wait().embeddings.shape == queued.wait().embeddings.shape
        assert not model._busy, "a refused or settled batch-1 call left its request marked busy"


def test_two_hundred_deferred_calls_finish_in_order(model, executor):
    finished = []

    def recorder(index):
        def handler(completed, total):
            if completed == total:
                finished.append(index)

        return handler

    texts = [f"deferred call {i}" for i in range(200)]
    calls = [model.deferred(executor).text_encode(t, progress=recorder(i)) for i, t in enumerate(texts)]
    results = [call.wait() for call in calls]
    assert finished == list(range(200)), f"completion order {finished[:20]}..."
    expected = model.on(executor).text_encode(texts).embeddings
    got = np.concatenate([r.embeddings for r in results])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_deferred_calls_on_a_busy_executor_queue_behind_it(model, executor):
    gate = Gate()
    first = model.deferred(executor).text_encode("first", progress=gate)
    assert gate.entered.wait(timeout=30)
    second = model.deferred(executor).text_encode("second")
    assert not second.done(), "the second call started while the first held the executor"
    gate.opened.set()
    assert second.wait().embeddings.shape == (1, first.wait().embeddings.shape[1])


def test_a_settled_deferred_answers_its_own_status_after_its_request_is_reused(model, executor):
    """Batch-1 deferred texts run on requests the executor keeps for reuse: once waited for, a
    Deferred answers its own final status and result while its request carries a later call."""
    first = model.deferred(executor).text_encode("first")
    result = first.wait()
    gate = Gate()
    holder = model.deferred(executor).text_encode("holder", progress=gate)  # holds the executor
    try:
        assert gate.entered.wait(timeout=30)
        texts = [f"queued {i}" for i in range(3)]
        queued = [model.deferred(executor).text_encode(text) for text in texts]  # the first reuses first's request
        assert not any(call.done() for call in queued)
        assert first.done() and first.status() == uform.Status.OK, first.status()
        assert first.wait() is result and repr(first) == "Deferred(ok)", repr(first)
    finally:
        gate.opened.set()
    holder.wait()
    got = np.concatenate([call.wait().embeddings for call in queued])
    expected = model.on(executor).text_encode(texts).embeddings
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert all(call.status() == uform.Status.OK for call in queued)


class GilWatcher:
    """Proves that a call released the GIL. A second thread, woken right before the call, needs the
    GIL to record what it saw; with a 30 s switch interval the interpreter does not take the GIL from
    the main thread by itself, so that thread only runs if the main thread releases the GIL, that is,
    inside the call. The calls under test last tens of milliseconds, far longer than a wake-up."""

    def __enter__(self):
        self.inside = self.seen = False
        self.gate = threading.Lock()
        self.gate.acquire()
        self.previous = sys.getswitchinterval()
        sys.setswitchinterval(30.0)
        self.thread = threading.Thread(target=self._watch)
        self.thread.start()  # it blocks on the gate without the GIL
        return self

    def _watch(self):
        with self.gate:
            self.seen = self.inside

    def start(self):
        """Call right before the call under test (nothing in between may release the GIL)."""
        self.inside = True
        self.gate.release()

    def __exit__(self, *exc_info):
        if not self.inside:
            self.gate.release()
        sys.setswitchinterval(self.previous)
        self.thread.join()


def test_blocking_calls_and_waits_release_the_gil(model, executor):
    # Calls of tens of milliseconds, so the spinner is surely scheduled while they run; drain and
    # wait get several calls queued ahead of them.
    images = np.random.default_rng(3).integers(0, 256, size=(48, 256, 256, 3), dtype=np.uint8)
    model.on(executor).image_encode_pixels(images[:1])  # the binding's arenas exist from here on
    model.image_encode_pixels(images[:1])

    def drain():
        pending = [model.deferred(executor).image_encode_pixels(images) for _ in range(4)]  # dropped, they would wait
        return lambda: (executor.drain(), pending)

    def wait():
        pending = [model.deferred(executor).image_encode_pixels(images) for _ in range(4)]
        return pending[-1].wait

    checks = {
        "model.image_encode_pixels (calling thread)": lambda: lambda: model.image_encode_pixels(images),
        "model.on(executor).image_encode_pixels": lambda: lambda: model.on(executor).image_encode_pixels(images),
        "executor.drain": drain,
        "Deferred.wait": wait,
    }
    for name, prepare in checks.items():
        call = prepare()
        with GilWatcher() as watcher:
            watcher.start()
            call()
            seen = watcher.seen  # read before anything else could release the GIL
        assert seen, f"{name}: no other Python thread ran while it was inside C"


def test_wait_lets_progress_handlers_run(model, executor):
    gate = Gate()
    pending = model.deferred(executor).text_encode("waits", progress=gate)
    assert gate.entered.wait(timeout=30)
    # Another Python thread opens the gate while the main thread sits in wait(); the handler itself
    # needs the GIL on the executor's thread. A wait() that held the GIL would deadlock here.
    opener = threading.Timer(0.05, gate.opened.set)
    opener.start()
    result = pending.wait()
    opener.join()
    assert gate.finished.is_set() and result.embeddings.shape[0] == 1


def test_closing_a_model_waits_for_its_deferred_calls(checkpoint, executor):
    model = uform.Model.load_ram(executor, checkpoint)
    gate = Gate()
    pending = model.deferred(executor).text_encode("still running", progress=gate)
    assert gate.entered.wait(timeout=30)
    opener = threading.Timer(0.1, gate.opened.set)
    opener.start()
    model.close()  # documented: waits for the model's unfinished Deferred calls
    opener.join()
    assert pending.done() and gate.finished.is_set(), "close() returned before the call was final"
    assert pending.wait().embeddings.shape[0] == 1
    with pytest.raises(uform.InvalidArgument, match="the model is closed"):
        model.text_encode("closed")
    model.close()  # a no-op


def test_closing_a_model_waits_for_its_batch_one_deferred_calls(checkpoint, executor):
    """A default deferred text_encode(str) runs on a request the executor reuses, which the model
    tracks apart from its other Deferred calls: close() waits for it too."""
    model = uform.Model.load_ram(executor, checkpoint)
    gate = Gate()
    blocker = model.deferred(executor).text_encode(["holds the executor"], progress=gate)
    assert gate.entered.wait(timeout=30)
    queued = model.deferred(executor).text_encode("queued behind it")
    assert not queued.done()
    opener = threading.Timer(0.1, gate.opened.set)
    opener.start()
    model.close()
    opener.join()
    assert blocker.done() and queued.done(), "close() returned before the calls were final"
    assert queued.wait().embeddings.shape[0] == 1 and blocker.wait().embeddings.shape[0] == 1
    with pytest.raises(uform.InvalidArgument, match="the model is closed"):
        model.deferred(executor).text_encode("closed")


def test_batch_one_texts_longer_than_a_reused_request_buffer(model, executor):
    """The reused batch-1 requests copy a short text into a buffer of their own and point at a long
    one in place: either way, every receiver answers what the general path does, and a short text
    after a long one is read from the buffer again."""
    long = "a long text, " * 60  # 780 bytes: more than the request's own buffer
    for text in ("short", long, "x", "short again", long, "é" * 200):
        expected = model.text_encode([text]).embeddings
        assert np.array_equal(model.text_encode(text).embeddings, expected), text
        with uform.Arena() as arena:
            assert np.array_equal(model.text_encode(text, arena=arena).embeddings, expected), text
        there = model.on(executor).text_encode([text]).embeddings
        assert np.array_equal(model.on(executor).text_encode(text).embeddings, there), text
        assert np.array_equal(model.deferred(executor).text_encode(text).wait().embeddings, there), text


def test_dropping_an_unfinished_deferred_waits(model, executor):
    gate = Gate()
    pending = model.deferred(executor).text_encode("dropped", progress=gate)
    assert gate.entered.wait(timeout=30)
    opener = threading.Timer(0.1, gate.opened.set)
    opener.start()
    del pending  # waits for the call: its request and inputs must outlive it
    opener.join()
    assert gate.finished.is_set(), "the Deferred was dropped before its call was final"
    assert model.on(executor).text_encode("after").embeddings.shape[0] == 1


def test_closing_an_executor_waits_for_queued_calls(model):
    executor = uform.Executor.for_ram(threads=1)
    calls = [model.deferred(executor).text_encode(f"queued {i}") for i in range(5)]
    executor.close()
    assert all(call.done() for call in calls)
    assert [call.wait().embeddings.shape[0] for call in calls] == [1] * 5
    with pytest.raises(uform.InvalidArgument, match="the executor is closed"):
        model.on(executor).text_encode("closed")
    with pytest.raises(uform.InvalidArgument, match="the executor is closed"):
        executor.threads


def test_executor_properties(executor):
    assert executor.threads == 2 and not executor.is_calling_thread
    assert executor.cpu_class == uform.cpu_class_detect()
    calling = uform.Executor()
    assert calling.threads == 1 and calling.is_calling_thread
    executor.drain("spinning")
    executor.drain(uform.Mood.PARKED)
    with pytest.raises(uform.InvalidArgument, match="mood"):
        executor.drain("asleep")


def test_python_threads_share_a_model_on_the_calling_thread(model):
    """Each Python thread runs its own calls inline; the binding's arenas and reused requests are
    never shared by two calls at once."""
    texts = [f"thread text {i}" for i in range(8)]
    expected = {text: model.text_encode(text).embeddings for text in texts}
    failures = []

    def worker(offset):
        for call in range(150):
            text = texts[(offset + call) % len(texts)]
            got = model.text_encode(text).embeddings
            if not np.array_equal(got, expected[text]):
                failures.append((offset, call, text))

    threads = [threading.Thread(target=worker, args=(offset,)) for offset in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, f"{len(failures)} calls answered another call's embedding, first {failures[0]}"


def test_executor_placement(model):
    with uform.Executor.for_ram(threads=1, numa_nodes=[0], cpu_class="serial") as placed:
        assert placed.cpu_class == uform.CpuClass.SERIAL and placed.threads == 1
        assert model.on(placed).text_encode("serial kernels").embeddings.shape[0] == 1
    with pytest.raises(uform.InvalidArgument) as caught:
        uform.Executor.for_ram(numa_nodes=[4000])
    assert "memory_domains[0]" in caught.value.message and caught.value.function == "uform_executor_for_ram", caught.value
