"""The tensor-program session from Python: build, compile, describe, invoke on NumPy arrays, release;
results checked against NumPy in float64 (an independent reference), failures by their statuses."""

import re
import struct

import numpy as np
import pytest

import uform


def softmax_program():
    """y = softmax(x · wᵀ) over rows: the header's example."""
    with uform.ProgramBuilder() as builder:
        x = builder.parameter("x", "f32", (2, 3))
        w = builder.parameter("w", uform.DType.F32, [4, 3])
        logits = builder.operation("matmul", [x, w], attributes=[0, 1])
        assert builder.type(logits) == (uform.DType.F32, (2, 4))
        builder.output("y", builder.operation(uform.Opcode.SOFTMAX, [logits], attributes=[1]))
        return builder.finish()


def softmax64(x, w):
    logits = x.astype(np.float64) @ w.astype(np.float64).T
    exps = np.exp(logits - logits.max(axis=1, keepdims=True))
    return exps / exps.sum(axis=1, keepdims=True)


def test_compile_describe_invoke():
    with uform.Session() as session:
        program = session.compile(softmax_program())
        assert [(d.dtype, d.shape, d.byte_size) for d in program.inputs] == [
            (uform.DType.F32, (2, 3), 24), (uform.DType.F32, (4, 3), 48)]
        assert [(d.dtype, d.shape, d.byte_size) for d in program.outputs] == [(uform.DType.F32, (2, 4), 32)]
        assert program.scratch_size >= 0
        rng = np.random.default_rng(9)
        x, w = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
        x_before, w_before = x.copy(), w.copy()
        (y,) = program.invoke(x, w)
        np.testing.assert_allclose(y, softmax64(x, w), rtol=1e-6, atol=1e-7)
        assert np.array_equal(x, x_before) and np.array_equal(w, w_before), "invoke wrote an input"
        out = np.full((2, 4), np.nan, np.float32)
        (same,) = program.invoke(x, w, out=[out])
        assert same is out and np.array_equal(out, y)
        program.release()
        with pytest.raises(uform.InvalidHandle) as caught:
            program.invoke(x, w)
        assert isinstance(caught.value, uform.InvalidArgument) and caught.value.session_status == uform.SessionStatus.INVALID_HANDLE
        with pytest.raises(uform.InvalidHandle):
            program.release()


def test_layer_norm_gelu_convert_and_constants():
    rng = np.random.default_rng(4)
    weight = rng.standard_normal(8).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    with uform.ProgramBuilder() as builder:
        x = builder.parameter(None, "f32", (3, 8))
        normed = builder.operation("layer_norm", [x, builder.constant(weight), builder.constant(bias)],
                                   attributes=[1, uform.float_bits(1e-6)])
        activated = builder.operation("gelu", [normed])
        builder.output("gelu", activated)
        builder.output("as_int", builder.operation("convert", [activated], dtype="i32"))
        wire = builder.finish()
    with uform.Session() as session:
        program = session.compile(wire)
        data = (rng.standard_normal((3, 8)) * 3).astype(np.float32)
        gelu, as_int = program.invoke(data)
    x64 = data.astype(np.float64)
    normed64 = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-6) * weight + bias
    from math import erf

    gelu64 = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))))(normed64)
    np.testing.assert_allclose(gelu, gelu64, rtol=1e-5, atol=1e-5)
    assert as_int.dtype == np.int32 and np.array_equal(as_int, np.trunc(gelu).astype(np.int32)), (as_int, gelu)


def test_bad_buffers_are_refused_before_c():
    with uform.Session() as session:
        program = session.compile(softmax_program())
        good_x, good_w = np.zeros((2, 3), np.float32), np.zeros((4, 3), np.float32)
        cases = [
            ((good_x,), None, "takes 2 inputs, got 1"),
            ((good_x.astype(np.float64), good_w), None, "arrays[0]: dtype float64"),
            ((good_x, np.zeros((3, 4), np.float32)), None, "arrays[1]: shape (3, 4)"),
            ((np.zeros((3, 2), np.float32).T, good_w), None, "arrays[0]: not C-contiguous"),
            ((good_x, [[0.0] * 3] * 4), None, "arrays[1]: expected a NumPy array"),
            ((good_x, good_w), [np.zeros((2, 4), np.float64)], "out[0]: dtype float64"),
            ((good_x, good_w), np.zeros((2, 4), np.float32), "out: expected a list"),
            ((good_x, good_w), [], "out: the program has 1 outputs"),
        ]
        for arrays, out, words in cases:
            with pytest.raises(uform.InvalidArgument, match=re.escape(words)):
                program.invoke(*arrays, out=out)
        shared = np.zeros(8 + 12, np.float32)
        with pytest.raises(uform.InvalidArgument, match="out\\[0\\]: shares memory with arrays\\[0\\]"):
            program.invoke(shared[:6].reshape(2, 3), good_w, out=[shared[:8].reshape(2, 4)])
        frozen = np.zeros((2, 4), np.float32)
        frozen.flags.writeable = False
        with pytest.raises(uform.InvalidArgument, match="read-only"):
            program.invoke(good_x, good_w, out=[frozen])


def test_malformed_and_newer_programs():
    with uform.Session() as session:
        with pytest.raises(uform.InvalidProgram) as caught:
            session.compile(b"UFTP\x01\x00\x00\x00garbage")  # version 1, then nonsense
        assert isinstance(caught.value, uform.FormatError) and caught.value.function == "uform_session_compile"
        assert caught.value.message == session.last_cause and caught.value.message, caught.value.message
        assert str(caught.value).startswith("UForm: invalid_program [uform_session_compile]: "), str(caught.value)
        wire = bytearray(softmax_program())
        assert wire[:4] == b"UFTP"
        wire[4:8] = struct.pack("<I", 2)
        with pytest.raises(uform.UnsupportedVersion):
            session.compile(bytes(wire))
        with pytest.raises(uform.InvalidArgument, match="wire: expected bytes"):
            session.compile("UFTP")


def test_a_full_session_refuses_more_programs():
    with uform.Session() as session:
        wire = softmax_program()
        programs = [session.compile(wire) for _ in range(64)]
        with pytest.raises(uform.TooManyPrograms):
            session.compile(wire)
        programs[10].release()
        session.compile(wire)  # the freed slot is reused


def test_builder_failures_name_the_cause():
    with uform.ProgramBuilder() as builder:
        x = builder.parameter("x", "f32", (2, 3))
        with pytest.raises(uform.InvalidProgram) as caught:
            builder.operation("matmul", [x, x])  # [2, 3] · [2, 3]: the inner sizes differ
        assert caught.value.message, "the builder's cause is empty"
        with pytest.raises(uform.InvalidArgument, match="opcode = 'conv2d'"):
            builder.operation("conv2d", [x])
        with pytest.raises(uform.InvalidArgument, match="shape: rank 9 above 8"):
            builder.parameter("big", "f32", (1,) * 9)
        with pytest.raises(uform.InvalidArgument, match="dtype: convert needs"):
            builder.operation("convert", [x])
