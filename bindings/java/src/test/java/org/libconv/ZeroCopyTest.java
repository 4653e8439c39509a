package org.libconv;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.ShortBuffer;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/** Direct buffers are wrapped in place; heap buffers and foreign byte orders are refused. */
public class ZeroCopyTest {
    private static Context ctx;

    @BeforeClass
    public static void open() {
        ctx = Context.cpu();
    }

    @AfterClass
    public static void close() {
        ctx.close();
    }

    private static ByteOrder otherOrder() {
        return ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
    }

    @Test
    public void writesThroughTheBufferAreSeenByLibconvAndBack() {
        FloatBuffer buf = Problems.directFloats(2 * 3 * 4);
        try (Tensor t = Tensor.wrap(ctx, buf, Layout.CHANNELS_FIRST, 2, 3, 4)) {
            assertTrue(t.isWrapped());
            // Java writes, libconv reads (conv_tensor_copy_to reads the tensor's memory).
            for (int i = 0; i < 24; ++i) buf.put(i, i * 0.5f);
            float[] seen = t.toFloatArray();
            for (int i = 0; i < 24; ++i) assertEquals(i * 0.5f, seen[i], 0);
            // libconv writes, Java reads.
            float[] in = new float[24];
            for (int i = 0; i < 24; ++i) in[i] = -i;
            t.copyFrom(in);
            for (int i = 0; i < 24; ++i) assertEquals(-i, buf.get(i), 0);
        }
    }

    @Test
    public void aComputationWritesIntoTheWrappedOutput() {
        // x: 1x1x5, w: 1x1x3 of ones: y[i] = x[i] + x[i+1] + x[i+2].
        DoubleBuffer x = Problems.directDoubles(5), w = Problems.directDoubles(3), y = Problems.directDoubles(3);
        for (int i = 0; i < 3; ++i) w.put(i, 1);
        try (Conv conv = new Conv(1);
             Tensor tx = Tensor.wrap(ctx, x, Layout.CHANNELS_FIRST, 1, 1, 5);
             Tensor tw = Tensor.wrap(ctx, w, Layout.CHANNELS_FIRST, 1, 1, 3);
             Tensor ty = Tensor.wrap(ctx, y, Layout.CHANNELS_FIRST, 1, 1, 3)) {
            for (int i = 0; i < 5; ++i) x.put(i, i);
            conv.forward(ctx, tx, tw, null, ty);
            assertArrayEquals(new double[] {3, 6, 9}, new double[] {y.get(0), y.get(1), y.get(2)}, 0);
            x.put(4, 100); // changed in place, seen by the next call
            conv.forward(ctx, tx, tw, null, ty);
            assertArrayEquals(new double[] {3, 6, 105}, new double[] {y.get(0), y.get(1), y.get(2)}, 0);
        }
    }

    @Test
    public void theTensorStartsAtThePosition() {
        FloatBuffer buf = Problems.directFloats(40);
        buf.position(7);
        try (Tensor at7 = Tensor.wrap(ctx, buf, Layout.CHANNELS_FIRST, 1, 2, 3);
             Tensor at0 = Tensor.wrap(ctx, Problems.directFloats(6), Layout.CHANNELS_FIRST, 1, 2, 3)) {
            assertEquals("the buffer's position is untouched", 7, buf.position());
            buf.put(7, 42f);
            buf.put(12, 43f);
            buf.put(13, 44f); // past the tensor
            float[] seen = at7.toFloatArray();
            assertEquals(42f, seen[0], 0);
            assertEquals(43f, seen[5], 0);
            assertNotEquals(0, at0.dataAddress());
        }
        // Two tensors on one buffer: addresses 4 bytes per float apart.
        FloatBuffer shared = Problems.directFloats(16);
        try (Tensor a = Tensor.wrap(ctx, shared, Layout.CHANNELS_FIRST, 1, 1, 4)) {
            shared.position(5);
            try (Tensor b = Tensor.wrap(ctx, shared, Layout.CHANNELS_FIRST, 1, 1, 4)) {
                assertEquals(a.dataAddress() + 20, b.dataAddress());
            }
        }
    }

    @Test
    public void byteDoubleAndShortBuffers() {
        ByteBuffer bytes = ByteBuffer.allocateDirect(64).order(ByteOrder.nativeOrder());
        try (Tensor t = Tensor.wrap(ctx, bytes, DType.FLOAT32, Layout.CHANNELS_LAST, 1, 4, 4)) {
            assertEquals(DType.FLOAT32, t.dtype());
            assertEquals(Layout.CHANNELS_LAST, t.layout());
            bytes.putFloat(12, 2.5f);
            assertEquals(2.5f, t.toFloatArray()[3], 0);
        }
        ShortBuffer halves = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder()).asShortBuffer();
        try (Tensor t = Tensor.wrap(ctx, halves, DType.BFLOAT16, Layout.CHANNELS_FIRST, 1, 2, 4)) {
            halves.put(1, (short) 0x3f80); // 1.0 in bfloat16
            short[] raw = new short[8];
            t.copyTo(raw);
            assertEquals((short) 0x3f80, raw[1]);
        }
    }

    @Test
    public void directBufferCopies() {
        try (Tensor t = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_FIRST, 1, 2, 3)) {
            DoubleBuffer src = Problems.directDoubles(8);
            for (int i = 0; i < 8; ++i) src.put(i, i + 1);
            src.position(2); // copies the 6 remaining
            t.copyFrom(src);
            assertEquals(2, src.position());
            assertArrayEquals(new double[] {3, 4, 5, 6, 7, 8}, t.toDoubleArray(), 0);
            DoubleBuffer dst = Problems.directDoubles(6);
            t.copyTo(dst);
            assertEquals(8, dst.get(5), 0);
            ByteBuffer raw = ByteBuffer.allocateDirect(48).order(ByteOrder.nativeOrder());
            t.copyTo(raw);
            assertEquals(3, raw.getDouble(0), 0);
        }
    }

    private static void expectRefusal(String contains, Runnable call) {
        try {
            call.run();
            fail("expected IllegalArgumentException mentioning " + contains);
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(contains));
        }
    }

    @Test
    public void heapBuffersAreRefused() {
        expectRefusal("heap buffer", () -> Tensor.wrap(ctx, FloatBuffer.allocate(8), Layout.CHANNELS_FIRST, 1, 1, 8));
        expectRefusal("heap buffer", () -> Tensor.wrap(ctx, DoubleBuffer.wrap(new double[8]), Layout.CHANNELS_FIRST, 1, 1, 8));
        expectRefusal("heap buffer",
                () -> Tensor.wrap(ctx, ByteBuffer.allocate(32), DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 8));
        expectRefusal("heap buffer", () -> Workspace.wrap(ctx, ByteBuffer.allocate(64)));
        try (Tensor t = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 8)) {
            expectRefusal("heap buffer", () -> t.copyFrom(FloatBuffer.allocate(8)));
            expectRefusal("heap buffer", () -> t.copyTo(FloatBuffer.allocate(8)));
        }
    }

    @Test
    public void foreignByteOrderIsRefused() {
        FloatBuffer swapped = ByteBuffer.allocateDirect(32).order(otherOrder()).asFloatBuffer();
        expectRefusal("byte order", () -> Tensor.wrap(ctx, swapped, Layout.CHANNELS_FIRST, 1, 1, 8));
        // ByteBuffer.allocateDirect is big-endian until told otherwise.
        ByteBuffer plain = ByteBuffer.allocateDirect(32).order(otherOrder());
        expectRefusal("byte order", () -> Tensor.wrap(ctx, plain, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 8));
        try (Tensor t = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 8)) {
            expectRefusal("byte order", () -> t.copyFrom(swapped));
        }
    }

    @Test
    public void wrongSizesTypesAndReadOnlyAreRefused() {
        expectRefusal("remaining", () -> Tensor.wrap(ctx, Problems.directFloats(7), Layout.CHANNELS_FIRST, 1, 1, 8));
        FloatBuffer f = Problems.directFloats(8);
        expectRefusal("read-only", () -> Tensor.wrap(ctx, f.asReadOnlyBuffer(), Layout.CHANNELS_FIRST, 1, 1, 8));
        ShortBuffer s = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder()).asShortBuffer();
        expectRefusal("FLOAT32", () -> Tensor.wrap(ctx, s, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 8));
        try (Tensor t = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 8)) {
            expectRefusal("FLOAT32", () -> t.copyFrom(new double[8]));
            expectRefusal("FLOAT32", () -> t.copyFrom(Problems.directDoubles(8)));
            t.copyFrom(f.asReadOnlyBuffer()); // reading from a read-only buffer is fine
            try {
                t.copyTo(f.asReadOnlyBuffer());
                fail("copied into a read-only buffer");
            } catch (ReadOnlyBufferException expected) {
                // good
            }
            try {
                t.copyFrom(Problems.directFloats(9));
                fail("copied 9 floats into 8");
            } catch (InvalidArgumentException e) {
                assertTrue(e.getMessage(), e.getMessage().contains("36"));
            }
        }
    }

    @Test
    public void misalignedBuffersAreRefused() {
        // A float view of a direct buffer one byte in: an odd address. Refused like Python's
        // wrap refuses it (before, libconv read floats at an odd address: UBSan).
        ByteBuffer raw = ByteBuffer.allocateDirect(64 + 8).order(ByteOrder.nativeOrder());
        raw.position(1);
        FloatBuffer odd = raw.slice().order(ByteOrder.nativeOrder()).asFloatBuffer();
        try {
            Tensor.wrap(ctx, odd, Layout.CHANNELS_FIRST, 1, 1, 8).close();
            fail("wrapped floats at an odd address");
        } catch (InvalidArgumentException e) {
            assertTrue(e.getMessage(), e.nativeMessage().contains("not aligned to its 4-byte elements"));
        }
        raw.position(4); // a multiple of 4: fine
        FloatBuffer aligned = raw.slice().order(ByteOrder.nativeOrder()).asFloatBuffer();
        Tensor.wrap(ctx, aligned, Layout.CHANNELS_FIRST, 1, 1, 8).close();
    }

    @Test
    public void wrappedWorkspaces() {
        ByteBuffer memory = ByteBuffer.allocateDirect(1 << 20);
        memory.position(64);
        try (Conv conv = new Conv(2).setPadding(1, 1).setAlgorithm(Op.FORWARD, Algorithm.IM2COL_GEMM);
             Workspace ws = Workspace.wrap(ctx, memory);
             Workspace tiny = Workspace.wrap(ctx, ByteBuffer.allocateDirect(8));
             Workspace grown = Workspace.create(ctx);
             Tensor x = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 3, 16, 16);
             Tensor w = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 4, 3, 3, 3);
             Tensor y = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 4, 16, 16)) {
            assertEquals((1 << 20) - 64, ws.size());
            assertEquals(8, tiny.size());
            assertFalse(ws.isClosed());
            long needed = conv.workspaceSize(ctx, Op.FORWARD, x, w, y);
            assertTrue(needed > 8 && needed <= ws.size());
            conv.forward(ctx, x, w, null, y, ws);
            conv.forward(ctx, x, w, null, y, grown);
            assertTrue("a library-owned workspace grows", grown.size() > 0);
            try {
                conv.forward(ctx, x, w, null, y, tiny);
                fail("an 8-byte workspace was enough");
            } catch (WorkspaceTooSmallException e) {
                assertTrue(e.getMessage(), e.getMessage().contains(Long.toString(needed)));
            }
        }
    }
}
