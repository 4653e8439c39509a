package org.libconv;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Every conv_status_t reaches Java as its ConvException subclass with the C message; Java-side
 * misuse gives the standard Java exceptions; a failed call changes nothing.
 */
public class ErrorsTest {
    private static Context ctx;

    @BeforeClass
    public static void open() {
        ctx = Context.cpu();
    }

    @AfterClass
    public static void close() {
        ctx.close();
    }

    /**
     * Runs a call that must fail with a status; checks the exception's class, status, function
     * and message (the C message of the same thread, which conv_last_error() still holds).
     */
    private static <E extends ConvException> E expect(Class<E> type, Status status, String function,
            String messagePart, Runnable call) {
        try {
            call.run();
        } catch (ConvException e) {
            assertSame("exception class for " + status + ": " + e, type, e.getClass());
            assertEquals(status, e.status());
            assertEquals(status.value(), e.code());
            assertEquals(function, e.function());
            assertTrue(e.getMessage(), e.getMessage().startsWith(function + ": "));
            assertTrue("message '" + e.nativeMessage() + "' lacks '" + messagePart + "'",
                    e.nativeMessage().contains(messagePart));
            assertEquals("the C message of this thread", LibConv.lastError(), e.nativeMessage());
            return type.cast(e);
        }
        fail("expected " + type.getSimpleName());
        return null;
    }

    @Test
    public void invalidArgument() {
        expect(InvalidArgumentException.class, Status.INVALID_ARGUMENT, "conv_context_set_threads", "0",
                () -> ctx.setThreads(0));
        expect(InvalidArgumentException.class, Status.INVALID_ARGUMENT, "conv_desc_create", "spatial_dims 4",
                () -> new Conv(4));
        expect(InvalidArgumentException.class, Status.INVALID_ARGUMENT, "conv_tensor_create", "rank 2",
                () -> Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 4, 4));
        expect(InvalidArgumentException.class, Status.INVALID_ARGUMENT, "conv_tensor_create", "negative",
                () -> Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, -1, 4));
        try (Conv conv = new Conv(2)) {
            expect(InvalidArgumentException.class, Status.INVALID_ARGUMENT, "conv_desc_set_strides", "strides[1] = 0",
                    () -> conv.setStrides(1, 0));
            expect(InvalidArgumentException.class, Status.INVALID_ARGUMENT, "conv_desc_set_groups", "groups 0",
                    () -> conv.setGroups(0));
            assertArrayEquals("a refused setter changes nothing", new long[] {1, 1}, conv.getStrides());
        }
        try (Tensor t = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 2, 3)) {
            expect(InvalidArgumentException.class, Status.INVALID_ARGUMENT, "conv_tensor_copy_from", "24",
                    () -> t.copyFrom(new float[5]));
            expect(InvalidArgumentException.class, Status.INVALID_ARGUMENT, "conv_tensor_get_dim", "axis 3",
                    () -> t.dim(3));
        }
    }

    @Test
    public void invalidHandleThroughTheNativeLayer() {
        // The public classes never pass a dead handle (they throw IllegalStateException first);
        // the native layer itself reports one as INVALID_HANDLE.
        expect(InvalidHandleException.class, Status.INVALID_HANDLE, "conv_tensor_get_ndim", "NULL",
                () -> ConvNative.conv_tensor_get_ndim(0, new int[1]));
    }

    @Test
    public void shapeMismatchChangesNothing() {
        try (Conv conv = new Conv(2);
             Tensor x = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 3, 5, 5);
             Tensor w = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 2, 4, 3, 3);
             Tensor y = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 2, 3, 3)) {
            float[] marker = new float[18];
            Arrays.fill(marker, 7f);
            y.copyFrom(marker);
            expect(ShapeMismatchException.class, Status.SHAPE_MISMATCH, "conv_forward", "channels",
                    () -> conv.forward(ctx, x, w, null, y));
            assertArrayEquals("a failed call leaves the output untouched", marker, y.toFloatArray(), 0);
            expect(ShapeMismatchException.class, Status.SHAPE_MISMATCH, "conv_output_dims", "channels",
                    () -> conv.outputDims(x, w));
        }
    }

    private static Tensor filled(long... dims) {
        Tensor t = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, dims);
        float[] v = new float[(int) t.elements()];
        for (int i = 0; i < v.length; i++) {
            v[i] = (i * 3) % 7 - 3;
        }
        t.copyFrom(v);
        return t;
    }

    /** Runs a call given the same tensor as an input and the output: refused, nothing written. */
    private static void refusedAlias(String function, String roles, Tensor shared, Runnable call) {
        float[] before = shared.toFloatArray();
        expect(InvalidArgumentException.class, Status.INVALID_ARGUMENT, function,
                roles + " are the same tensor", call);
        assertArrayEquals("the shared tensor is unchanged", before, shared.toFloatArray(), 0);
    }

    @Test
    public void anOutputThatIsAnInputIsRefused() {
        // Shapes under which the shared tensor fits both roles: only the aliasing check refuses.
        try (Conv plain = new Conv(2);
             Conv padded = new Conv(2).setPadding(1, 1);
             Tensor x = filled(2, 2, 3, 3);
             Tensor w = filled(2, 2, 2, 2); // y's shape
             Tensor sq = filled(2, 3, 5, 5);
             Tensor k3 = filled(3, 3, 3, 3);
             Tensor dy1 = filled(2, 2, 1, 1);
             Tensor xb = filled(1, 2, 3, 3);
             Tensor dwb = filled(2, 2, 3, 3);
             Tensor dyb = filled(1, 2, 1, 1)) {
            refusedAlias("conv_forward", "output y and input w", w,
                    () -> plain.forward(ctx, x, w, null, w));
            refusedAlias("conv_backward_data", "output dx and input dy", sq,
                    () -> padded.backwardData(ctx, k3, sq, sq));
            refusedAlias("conv_backward_filter", "output dw and input x", dwb,
                    () -> plain.backwardFilter(ctx, dwb, dy1, dwb, null));
            refusedAlias("conv_backward_filter", "output db and input dy", dyb,
                    () -> plain.backwardFilter(ctx, xb, dyb, dwb, dyb));
            refusedAlias("conv_find_algorithms", "output y and input x", sq,
                    () -> padded.findAlgorithms(ctx, Op.FORWARD, sq, k3, sq, null));
        }
    }

    @Test
    public void typeMismatch() {
        try (Conv conv = new Conv(1);
             Tensor x = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 5);
             Tensor w = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_FIRST, 1, 1, 3);
             Tensor y = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 3)) {
            expect(TypeMismatchException.class, Status.TYPE_MISMATCH, "conv_forward", "",
                    () -> conv.forward(ctx, x, w, null, y));
        }
    }

    @Test
    public void unsupported() {
        try (Conv conv = new Conv(1);
             Tensor x = Tensor.create(ctx, DType.FLOAT16, Layout.CHANNELS_FIRST, 1, 1, 5);
             Tensor w = Tensor.create(ctx, DType.FLOAT16, Layout.CHANNELS_FIRST, 1, 1, 3);
             Tensor y = Tensor.create(ctx, DType.FLOAT16, Layout.CHANNELS_FIRST, 1, 1, 3);
             Tensor x32 = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 5);
             Tensor w32 = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 3);
             Tensor y32 = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 3)) {
            expect(UnsupportedException.class, Status.UNSUPPORTED, "conv_forward", "",
                    () -> conv.forward(ctx, x, w, null, y));
            conv.setAlgorithm(Op.FORWARD, Algorithm.GEMM_1X1); // a 3-tap kernel is not 1x1
            expect(UnsupportedException.class, Status.UNSUPPORTED, "conv_forward", "",
                    () -> conv.forward(ctx, x32, w32, null, y32));
        }
    }

    @Test
    public void overflowAndOutOfMemory() {
        long big = 1L << 40;
        expect(OverflowException.class, Status.OVERFLOW, "conv_tensor_create", "",
                () -> Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, big, big, 1));
        // 2^52 bytes: more than any address space, so the allocation fails at once.
        expect(OutOfMemoryException.class, Status.OUT_OF_MEMORY, "conv_tensor_create", "bytes",
                () -> Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1L << 20, 1L << 20, 1L << 10));
        assertEquals("the refused tensors were not registered", 0, ctx.openChildren());
    }

    @Test
    public void workspaceTooSmall() {
        try (Conv conv = new Conv(2).setAlgorithm(Op.FORWARD, Algorithm.IM2COL_GEMM);
             Workspace ws = Workspace.wrap(ctx, java.nio.ByteBuffer.allocateDirect(0));
             Tensor x = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_FIRST, 1, 2, 6, 6);
             Tensor w = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_FIRST, 2, 2, 3, 3);
             Tensor y = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_FIRST, 1, 2, 4, 4)) {
            expect(WorkspaceTooSmallException.class, Status.WORKSPACE_TOO_SMALL, "conv_forward", "",
                    () -> conv.forward(ctx, x, w, null, y, ws));
        }
    }

    @Test
    public void notAvailable() {
        int gpus = LibConv.deviceCount(Device.CUDA);
        if (gpus == 0)
            expect(NotAvailableException.class, Status.NOT_AVAILABLE, "conv_context_create", "CUDA",
                    () -> new Context(Device.CUDA, 0));
        assertEquals(1, LibConv.deviceCount(Device.CPU));
        // past the devices there are: not available; negative: a wrong argument
        expect(NotAvailableException.class, Status.NOT_AVAILABLE, "conv_context_create",
                "CPU device 1 requested", () -> new Context(Device.CPU, 1));
        expect(InvalidArgumentException.class, Status.INVALID_ARGUMENT, "conv_context_create",
                "device index -1 is negative", () -> new Context(Device.CPU, -1));
    }

    @Test
    public void ioErrorAndBadFile() throws IOException {
        Path dir = Files.createTempDirectory("libconv-errors");
        try {
            Path missing = dir.resolve("missing.txt");
            expect(IoErrorException.class, Status.IO_ERROR, "conv_context_load_tuning", missing.toString(),
                    () -> ctx.loadTuning(missing));
            Path garbage = dir.resolve("garbage.txt");
            Files.write(garbage, "not a tuning file\n".getBytes(StandardCharsets.UTF_8));
            expect(BadFileException.class, Status.BAD_FILE, "conv_context_load_tuning", "garbage.txt",
                    () -> ctx.loadTuning(garbage));
            expect(IoErrorException.class, Status.IO_ERROR, "conv_context_save_tuning", "",
                    () -> ctx.saveTuning(dir.resolve("no/such/dir/t.txt")));
        } finally {
            for (Path p : new Path[] {dir.resolve("garbage.txt"), dir}) Files.deleteIfExists(p);
        }
    }

    @Test
    public void everyStatusHasItsException() {
        for (Status s : Status.values()) {
            assertNotNull(s.description());
            if (s == Status.SUCCESS) continue;
            ConvException e = ConvException.fromNative(s.value(), "conv_x",
                    "m\u00e9ssage".getBytes(StandardCharsets.UTF_8));
            assertEquals(s, e.status());
            assertEquals("conv_x: m\u00e9ssage", e.getMessage());
            String expected = "";
            for (String word : s.name().split("_"))
                expected += word.charAt(0) + word.substring(1).toLowerCase(java.util.Locale.ROOT);
            assertEquals(expected + "Exception", e.getClass().getSimpleName());
            assertEquals(ConvException.class, e.getClass().getSuperclass());
        }
        ConvException unknown = ConvException.of(999, "conv_y", "");
        assertEquals(ConvException.class, unknown.getClass());
        assertEquals(null, unknown.status());
        assertEquals(999, unknown.code());
    }

    @Test
    public void javaSideMisuse() {
        try (Conv conv = new Conv(2);
             Tensor x = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 4, 4)) {
            try {
                conv.setStrides(1, 1, 1);
                fail("three strides for two axes");
            } catch (IllegalArgumentException e) {
                assertTrue(e.getMessage().contains("3 values for 2"));
            }
            try {
                conv.forward(ctx, x, null, null, x);
                fail("a null filter");
            } catch (NullPointerException e) {
                assertTrue(e.getMessage().contains("w"));
            }
            try {
                conv.outputDims(new long[] {1, 1, 4, 4}, new long[] {1, 1, 3});
                fail("ranks differ");
            } catch (IllegalArgumentException e) {
                // good
            }
        }
    }
}
