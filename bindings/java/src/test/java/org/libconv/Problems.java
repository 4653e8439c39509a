package org.libconv;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.Random;

/** Random problems and helpers shared by the tests. */
final class Problems {
    private Problems() {}

    /** A random problem: geometry and dims. */
    static final class Problem {
        Reference.Geometry g;
        long[] xd, wd, yd;
        boolean bias;

        long[] bd() {
            long[] d = new long[xd.length];
            Arrays.fill(d, 1);
            d[1] = yd[1];
            return d;
        }

        @Override
        public String toString() {
            return "x " + Arrays.toString(xd) + " w " + Arrays.toString(wd) + " y " + Arrays.toString(yd) + " " + g
                    + (bias ? " bias" : "");
        }
    }

    static Problem random(Random r, boolean allowTransposed) {
        for (;;) {
            Problem p = new Problem();
            int sp = 1 + r.nextInt(3);
            Reference.Geometry g = new Reference.Geometry(sp);
            g.mode = allowTransposed && r.nextInt(4) == 0 ? Mode.TRANSPOSED : Mode.CONVOLUTION;
            g.groups = 1 + r.nextInt(3);
            long n = r.nextInt(12) == 0 ? 0 : 1 + r.nextInt(3);
            long a = 1 + r.nextInt(3), b = 1 + r.nextInt(3);
            int maxIn = sp == 3 ? 5 : sp == 2 ? 8 : 12;
            p.xd = new long[sp + 2];
            p.wd = new long[sp + 2];
            p.xd[0] = n;
            p.xd[1] = g.groups * a;
            if (g.mode == Mode.CONVOLUTION) {
                p.wd[0] = g.groups * b;
                p.wd[1] = a;
            } else {
                p.wd[0] = g.groups * a;
                p.wd[1] = b;
            }
            for (int i = 0; i < sp; ++i) {
                p.xd[2 + i] = 1 + r.nextInt(maxIn);
                p.wd[2 + i] = 1 + r.nextInt(3);
                g.stride[i] = 1 + r.nextInt(2);
                g.dilation[i] = 1 + r.nextInt(2);
                g.padBegin[i] = r.nextInt(3);
                g.padEnd[i] = r.nextInt(3);
                if (g.mode == Mode.TRANSPOSED)
                    g.outputPadding[i] = r.nextInt((int) Math.max(g.stride[i], g.dilation[i]));
            }
            int pad = r.nextInt(8);
            if (pad == 1) g.autoPad = AutoPad.VALID;
            else if (pad == 2) g.autoPad = AutoPad.SAME_UPPER;
            else if (pad == 3) g.autoPad = AutoPad.SAME_LOWER;
            g.relu = r.nextInt(3) == 0;
            p.bias = r.nextBoolean();
            p.g = g;
            p.yd = Reference.outputDims(g, p.xd, p.wd);
            if (p.yd != null) return p;
        }
    }

    /** Random data: small integers (exact in float32 sums) or any doubles. */
    static double[] data(Random r, long[] dims, boolean integers) {
        double[] a = new double[(int) Reference.product(dims)];
        for (int i = 0; i < a.length; ++i) a[i] = integers ? r.nextInt(5) - 2 : 2 * r.nextDouble() - 1;
        return a;
    }

    static FloatBuffer directFloats(int n) {
        return ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder()).asFloatBuffer();
    }

    static DoubleBuffer directDoubles(int n) {
        return ByteBuffer.allocateDirect(8 * n).order(ByteOrder.nativeOrder()).asDoubleBuffer();
    }

    /**
     * A tensor holding logical (channels-first) data in a layout, either owning its memory or
     * wrapping a direct buffer.
     */
    static Tensor tensor(Context ctx, DType dtype, Layout layout, long[] dims, double[] logical, boolean wrap) {
        double[] stored = Reference.toStorage(logical, dims, layout);
        int n = stored.length;
        Tensor t;
        if (wrap) {
            if (dtype == DType.FLOAT32) {
                FloatBuffer b = directFloats(n);
                for (int i = 0; i < n; ++i) b.put(i, (float) stored[i]);
                t = Tensor.wrap(ctx, b, layout, dims);
            } else {
                DoubleBuffer b = directDoubles(n);
                for (int i = 0; i < n; ++i) b.put(i, stored[i]);
                t = Tensor.wrap(ctx, b, layout, dims);
            }
        } else {
            t = Tensor.create(ctx, dtype, layout, dims);
            if (dtype == DType.FLOAT32) {
                float[] f = new float[n];
                for (int i = 0; i < n; ++i) f[i] = (float) stored[i];
                t.copyFrom(f);
            } else {
                t.copyFrom(stored);
            }
        }
        return t;
    }

    /** An output tensor filled with NaN, so that elements never written show. */
    static Tensor nanTensor(Context ctx, DType dtype, Layout layout, long[] dims, boolean wrap) {
        double[] nan = new double[(int) Reference.product(dims)];
        Arrays.fill(nan, Double.NaN);
        return tensor(ctx, dtype, layout, dims, nan, wrap);
    }

    /** The logical (channels-first) contents of a tensor. */
    static double[] read(Tensor t) {
        double[] stored;
        if (t.dtype() == DType.FLOAT32) {
            float[] f = t.toFloatArray();
            stored = new double[f.length];
            for (int i = 0; i < f.length; ++i) stored[i] = f[i];
        } else {
            stored = t.toDoubleArray();
        }
        return Reference.fromStorage(stored, t.dims(), t.layout());
    }

    static void assertClose(String what, double[] expected, double[] actual, DType dtype) {
        assertEquals(what + ": length", expected.length, actual.length);
        double scale = 1;
        for (double e : expected) scale = Math.max(scale, Math.abs(e));
        // Loose enough for Winograd (about 10x the error of direct summation).
        double tol = (dtype == DType.FLOAT32 ? 1e-4 : 1e-10) * scale;
        for (int i = 0; i < expected.length; ++i) {
            if (!(Math.abs(expected[i] - actual[i]) <= tol))
                fail(what + ": element " + i + " is " + actual[i] + ", expected " + expected[i] + " (tolerance " + tol
                        + ")");
        }
    }
}
