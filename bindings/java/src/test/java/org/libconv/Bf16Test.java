package org.libconv;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.Random;
import org.junit.AfterClass;
import org.junit.Assume;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * BFLOAT16 convolutions on the CPU (AVX-512), tensors filled and read as raw 16-bit values. The
 * plain-Java reference sums in double the same bf16 values; libconv sums in float and rounds each
 * output once, so per element |got - want| <= 1e-3 * (the sum over |terms|) + 4 * 2^-8 * |want|
 * (reductions here stay below 10^4 terms: 1e-5 * sqrt(L)). Random problems cover 1-3 spatial dims,
 * both layouts, groups, strides, dilations, padding, the transposed mode, bias and ReLU. Skipped
 * where the CPU does not compute bf16.
 */
public class Bf16Test {
    private static Context ctx;

    @BeforeClass
    public static void open() {
        ctx = Context.cpu();
    }

    @AfterClass
    public static void close() {
        ctx.close();
    }

    static short toBf16(double v) {
        int b = Float.floatToRawIntBits((float) v);
        b += 0x7fff + ((b >>> 16) & 1);
        return (short) (b >>> 16);
    }

    static double fromBf16(short h) {
        return Float.intBitsToFloat((h & 0xffff) << 16);
    }

    /** Random values rounded to bf16 (as doubles), logical channels-first order. */
    static double[] data(Random r, long[] dims) {
        double[] v = new double[(int) Reference.product(dims)];
        for (int i = 0; i < v.length; ++i) v[i] = fromBf16(toBf16(2 * r.nextDouble() - 1));
        return v;
    }

    static double[] abs(double[] v) {
        if (v == null) return null;
        double[] a = new double[v.length];
        for (int i = 0; i < v.length; ++i) a[i] = Math.abs(v[i]);
        return a;
    }

    static Tensor tensor(Layout layout, long[] dims, double[] logical) {
        double[] stored = Reference.toStorage(logical, dims, layout);
        short[] bits = new short[stored.length];
        for (int i = 0; i < bits.length; ++i) bits[i] = toBf16(stored[i]);
        Tensor t = Tensor.create(ctx, DType.BFLOAT16, layout, dims);
        t.copyFrom(bits);
        return t;
    }

    static Tensor nanTensor(Layout layout, long[] dims) {
        double[] nan = new double[(int) Reference.product(dims)];
        java.util.Arrays.fill(nan, Double.NaN);
        return tensor(layout, dims, nan);
    }

    static double[] read(Tensor t) {
        short[] bits = new short[(int) Reference.product(t.dims())];
        t.copyTo(bits);
        double[] stored = new double[bits.length];
        for (int i = 0; i < bits.length; ++i) stored[i] = fromBf16(bits[i]);
        return Reference.fromStorage(stored, t.dims(), t.layout());
    }

    static void assertWithin(String what, double[] want, double[] mag, double[] got) {
        assertEquals(what + ": length", want.length, got.length);
        for (int i = 0; i < want.length; ++i) {
            double bound = 1e-3 * mag[i] + 4 * 0x1p-8 * Math.abs(want[i]) + 1e-30;
            if (!(Math.abs(got[i] - want[i]) <= bound))
                fail(what + ": element " + i + " is " + got[i] + ", expected " + want[i] + " (bound " + bound + ")");
        }
    }

    static boolean available() {
        long[] d = {1, 1, 1};
        try (Conv conv = new Conv(1); Tensor x = tensor(Layout.CHANNELS_FIRST, d, new double[] {1});
             Tensor y = nanTensor(Layout.CHANNELS_FIRST, d)) {
            conv.forward(ctx, x, x, null, y);
            return true;
        } catch (UnsupportedException e) {
            return false;
        }
    }

    @Test
    public void randomConvolutions() {
        Assume.assumeTrue("this CPU does not compute bf16", available());
        checkRandom(new Random(20261125), 120, false);
    }

    /**
     * Random problems (no transposed ones with {@code tiles}, nor depthwise ones: the brgemm
     * solvers leave those to others), every pass against the reference; with {@code tiles} each
     * pass forced to its brgemm solver.
     */
    private static void checkRandom(Random r, int problems, boolean tiles) {
        for (int done = 0; done < problems; ) {
            Problems.Problem p = Problems.random(r, !tiles);
            if (tiles && p.g.groups > 1 && p.wd[1] == 1 && p.wd[0] == p.g.groups) continue;  // depthwise
            ++done;
            Layout layout = r.nextBoolean() ? Layout.CHANNELS_FIRST : Layout.CHANNELS_LAST;
            String what = p + " " + layout + (tiles ? " on tiles" : "");
            double[] x = data(r, p.xd), w = data(r, p.wd), dy = data(r, p.yd);
            double[] b = p.bias ? data(r, p.bd()) : null;
            try (Conv conv = new Conv(p.g.spatial);
                 Tensor tx = tensor(layout, p.xd, x);
                 Tensor tw = tensor(layout, p.wd, w);
                 Tensor tb = b == null ? null : tensor(layout, p.bd(), b);
                 Tensor ty = nanTensor(layout, p.yd);
                 Tensor tdy = tensor(layout, p.yd, dy);
                 Tensor tdx = nanTensor(layout, p.xd);
                 Tensor tdw = nanTensor(layout, p.wd)) {
                p.g.apply(conv);
                if (tiles)
                    conv.setAlgorithm(Op.FORWARD, "brgemm_forward")
                            .setAlgorithm(Op.BACKWARD_DATA, "brgemm_backward_data")
                            .setAlgorithm(Op.BACKWARD_FILTER, "brgemm_backward_filter");
                assertEquals(DType.BFLOAT16, ty.dtype());
                conv.forward(ctx, tx, tw, tb, ty);
                assertWithin(what + ": forward", Reference.forward(p.g, x, p.xd, w, p.wd, b, p.yd),
                        Reference.forward(p.g, abs(x), p.xd, abs(w), p.wd, abs(b), p.yd), read(ty));
                conv.backwardData(ctx, tw, tdy, tdx);
                assertWithin(what + ": backward data", Reference.backwardData(p.g, w, p.wd, dy, p.yd, p.xd),
                        Reference.backwardData(p.g, abs(w), p.wd, abs(dy), p.yd, p.xd), read(tdx));
                conv.backwardFilter(ctx, tx, tdy, tdw, null);
                assertWithin(what + ": backward filter", Reference.backwardFilter(p.g, x, p.xd, dy, p.yd, p.wd),
                        Reference.backwardFilter(p.g, abs(x), p.xd, abs(dy), p.yd, p.wd), read(tdw));
            }
        }
    }

    /** Whether the brgemm solvers compute bf16 here: AMX tiles, or CONV_CPU_AMX=emulate. */
    private static boolean tiles() {
        long[] d = {1, 1, 3};
        try (Conv conv = new Conv(1).setAlgorithm(Op.FORWARD, "brgemm_forward");
             Tensor x = Tensor.create(ctx, DType.BFLOAT16, Layout.CHANNELS_FIRST, d);
             Tensor y = Tensor.create(ctx, DType.BFLOAT16, Layout.CHANNELS_FIRST, new long[] {1, 1, 1})) {
            conv.forward(ctx, x, x, null, y);
            return true;
        } catch (UnsupportedException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("AMX") || e.getMessage().contains("AVX-512"));
            return false;
        }
    }

    /** The same on the AMX tiles: each pass forced to its brgemm solver (ctest runs this class
     * again with CONV_CPU_AMX=emulate where the CPU has no tiles). */
    @Test
    public void randomConvolutionsOnTiles() {
        Assume.assumeTrue("no AMX tiles in this process", tiles());
        checkRandom(new Random(20261128), 30, true);
    }

    @Test
    public void float16StaysStorageOnly() {
        long[] d = {1, 1, 1};
        try (Conv conv = new Conv(1);
             Tensor h = Tensor.create(ctx, DType.FLOAT16, Layout.CHANNELS_FIRST, d);
             Tensor y = Tensor.create(ctx, DType.FLOAT16, Layout.CHANNELS_FIRST, d)) {
            conv.forward(ctx, h, h, null, y);
            fail("float16 was computed on the CPU");
        } catch (UnsupportedException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("float16"));
        }
    }
}
