package org.libconv;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.Arrays;
import org.junit.Assume;
import org.junit.Test;

/** Context settings: threads, math mode, the numerical guard, a native allocator. */
public class ContextTest {
    @Test
    public void settings() {
        try (Context ctx = Context.cpu()) {
            assertEquals(Device.CPU, ctx.device());
            assertEquals(0, ctx.deviceIndex());
            assertTrue(ctx.threads() >= 1);
            assertEquals(3, ctx.setThreads(3).threads());
            for (MathMode m : MathMode.values()) assertEquals(m, ctx.setMath(m).math());
            assertTrue(ctx.setCheckNumerics(true).checkNumerics());
            assertFalse(ctx.setCheckNumerics(false).checkNumerics());
            assertTrue(ctx.setDeterministic(true).isDeterministic());
            assertFalse(ctx.setDeterministic(false).isDeterministic());
            assertEquals(1L << 20, ctx.setWorkspaceLimit(1L << 20).workspaceLimit());
            assertTrue(ctx.deviceName(), ctx.deviceName().startsWith("cpu"));
            assertEquals("no stream on the CPU", 0, ctx.stream());
            ctx.synchronize(); // a no-op on the CPU
            try {
                ctx.setStream(0);
                fail("a CUDA stream for a CPU context");
            } catch (UnsupportedException expected) {
                assertEquals("conv_context_set_stream", expected.function());
            }
        }
    }

    @Test
    public void tensorToTensorCopies() {
        try (Context ctx = Context.cpu();
             Tensor a = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 2, 3);
             Tensor b = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 2, 3);
             Tensor c = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 3, 2)) {
            assertEquals(Device.CPU, a.device());
            assertEquals(0, a.deviceIndex());
            a.copyFrom(new float[] {1, 2, 3, 4, 5, 6});
            b.copyFrom(a);
            assertEquals(6f, b.toFloatArray()[5], 0);
            try {
                c.copyFrom(a);
                fail("copied 1x2x3 into 1x3x2");
            } catch (ConvException expected) {
                assertEquals("conv_tensor_copy", expected.function());
            }
        }
    }

    @Test
    public void theNumericalGuardThrowsAfterWriting() {
        try (Context ctx = Context.cpu().setCheckNumerics(true);
             Conv conv = new Conv(1);
             Tensor x = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 4);
             Tensor w = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 1);
             Tensor y = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 4)) {
            x.copyFrom(new float[] {1, 2, Float.NaN, 4});
            w.copyFrom(new float[] {2});
            try {
                conv.forward(ctx, x, w, null, y);
                fail("a NaN went through");
            } catch (NumericalErrorException e) {
                assertEquals(Status.NUMERICAL_ERROR, e.status());
                assertEquals("conv_forward", e.function());
            }
            float[] out = y.toFloatArray();
            assertEquals("the output was written: " + Arrays.toString(out), 8f, out[3], 0);
            ctx.setCheckNumerics(false);
            conv.forward(ctx, x, w, null, y);
        }
    }

    @Test
    public void aNativeAllocator() {
        try (Context ctx = Context.cpu()) {
            try {
                ctx.setAllocator(1234, 0, 0);
                fail("one function without the other");
            } catch (InvalidArgumentException expected) {
                assertEquals("conv_context_set_allocator", expected.function());
            }
            ctx.resetAllocator();
            Assume.assumeTrue("-Dlibconv.test.allocator not given", TestAllocator.LIBRARY != null);
            long before = TestAllocator.allocations(), freedBefore = TestAllocator.releases();
            ctx.setAllocator(TestAllocator.allocFunction(), TestAllocator.freeFunction(), 0x5eedL);
            Tensor t = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_FIRST, 2, 3, 4);
            assertEquals(1, TestAllocator.allocations() - before);
            assertEquals(0x5eedL, TestAllocator.lastUser());
            t.copyFrom(new double[24]);
            t.close();
            assertEquals(1, TestAllocator.releases() - freedBefore);
            ctx.resetAllocator();
            Tensor u = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_FIRST, 2, 3, 4);
            assertEquals("the default again", 1, TestAllocator.allocations() - before);
            u.close();
        }
    }
}
