package org.libconv;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.Random;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Forward, backward-data and backward-filter (with the bias gradient) against the plain-Java
 * reference on random problems: 1-3 spatial dims, both layouts, groups, strides, dilations,
 * asymmetric and automatic padding, transposed mode, bias and ReLU, zero batches, FLOAT32 and
 * FLOAT64, owned and wrapped tensors, automatic and forced algorithms.
 */
public class ForwardBackwardTest {
    private static Context ctx;

    @BeforeClass
    public static void open() {
        ctx = Context.cpu();
    }

    @AfterClass
    public static void close() {
        ctx.close();
    }

    /** Runs one problem through the three passes and compares. */
    static void check(Context ctx, Problems.Problem p, Random r, DType dtype, Layout layout, boolean wrap,
            Algorithm algorithm) {
        String what = p + " " + dtype + " " + layout + (wrap ? " wrapped " : " owned ") + algorithm;
        boolean ints = dtype == DType.FLOAT32;
        double[] x = Problems.data(r, p.xd, ints);
        double[] w = Problems.data(r, p.wd, ints);
        double[] b = p.bias ? Problems.data(r, new long[] {1, p.yd[1], 1}, ints) : null;
        double[] dy = Problems.data(r, p.yd, ints);
        try (Conv conv = new Conv(p.g.spatial);
             Tensor tx = Problems.tensor(ctx, dtype, layout, p.xd, x, wrap);
             Tensor tw = Problems.tensor(ctx, dtype, layout, p.wd, w, wrap);
             Tensor tb = b == null ? null : Problems.tensor(ctx, dtype, layout, p.bd(), b, wrap);
             Tensor ty = Problems.nanTensor(ctx, dtype, layout, p.yd, wrap);
             Tensor tdy = Problems.tensor(ctx, dtype, layout, p.yd, dy, wrap);
             Tensor tdx = Problems.nanTensor(ctx, dtype, layout, p.xd, wrap);
             Tensor tdw = Problems.nanTensor(ctx, dtype, layout, p.wd, wrap);
             Tensor tdb = b == null ? null : Problems.nanTensor(ctx, dtype, layout, p.bd(), wrap)) {
            p.g.apply(conv);
            for (Op op : Op.values()) conv.setAlgorithm(op, algorithm);
            assertArrayEquals(what + ": output dims", p.yd, conv.outputDims(tx, tw));

            conv.forward(ctx, tx, tw, tb, ty);
            Problems.assertClose(what + ": forward", Reference.forward(p.g, x, p.xd, w, p.wd, b, p.yd),
                    Problems.read(ty), dtype);

            conv.backwardData(ctx, tw, tdy, tdx);
            Problems.assertClose(what + ": backward data", Reference.backwardData(p.g, w, p.wd, dy, p.yd, p.xd),
                    Problems.read(tdx), dtype);

            conv.backwardFilter(ctx, tx, tdy, tdw, tdb);
            Problems.assertClose(what + ": backward filter",
                    Reference.backwardFilter(p.g, x, p.xd, dy, p.yd, p.wd), Problems.read(tdw), dtype);
            if (tdb != null)
                Problems.assertClose(what + ": bias gradient", Reference.biasGradient(dy, p.yd), Problems.read(tdb),
                        dtype);
        }
    }

    @Test
    public void randomConvolutions() {
        Random r = new Random(20240501);
        for (int i = 0; i < 160; ++i) {
            Problems.Problem p = Problems.random(r, false);
            check(ctx, p, r, r.nextBoolean() ? DType.FLOAT32 : DType.FLOAT64,
                    r.nextBoolean() ? Layout.CHANNELS_FIRST : Layout.CHANNELS_LAST, r.nextBoolean(),
                    r.nextInt(3) == 0 ? Algorithm.IM2COL_GEMM : Algorithm.AUTO);
        }
    }

    @Test
    public void randomTransposedConvolutions() {
        Random r = new Random(77);
        int transposed = 0;
        while (transposed < 60) {
            Problems.Problem p = Problems.random(r, true);
            if (p.g.mode != Mode.TRANSPOSED) continue;
            ++transposed;
            check(ctx, p, r, r.nextBoolean() ? DType.FLOAT32 : DType.FLOAT64,
                    r.nextBoolean() ? Layout.CHANNELS_FIRST : Layout.CHANNELS_LAST, r.nextBoolean(), Algorithm.AUTO);
        }
    }

    @Test
    public void everyRankAndLayoutWithGroups() {
        Random r = new Random(5);
        for (int sp = 1; sp <= 3; ++sp)
            for (Layout layout : Layout.values())
                for (DType dtype : new DType[] {DType.FLOAT32, DType.FLOAT64})
                    for (long groups : new long[] {1, 2, 4}) {
                        Problems.Problem p = new Problems.Problem();
                        p.g = new Reference.Geometry(sp);
                        p.g.groups = groups;
                        p.g.stride[0] = 2;
                        p.g.padBegin[sp - 1] = 1;
                        p.xd = new long[sp + 2];
                        p.wd = new long[sp + 2];
                        p.xd[0] = 2;
                        p.xd[1] = 4;
                        p.wd[0] = 8;
                        p.wd[1] = 4 / groups;
                        for (int i = 0; i < sp; ++i) {
                            p.xd[2 + i] = 5 + i;
                            p.wd[2 + i] = 3;
                        }
                        p.bias = true;
                        p.yd = Reference.outputDims(p.g, p.xd, p.wd);
                        check(ctx, p, r, dtype, layout, groups == 2, Algorithm.AUTO);
                    }
    }

    /** Pointwise and depthwise problems, where libconv picks special algorithms. */
    @Test
    public void pointwiseAndDepthwise() {
        Random r = new Random(9);
        for (Layout layout : Layout.values()) {
            Problems.Problem p = new Problems.Problem();
            p.g = new Reference.Geometry(2);
            p.xd = new long[] {2, 6, 7, 5};
            p.wd = new long[] {4, 6, 1, 1};
            p.yd = Reference.outputDims(p.g, p.xd, p.wd);
            check(ctx, p, r, DType.FLOAT32, layout, false, Algorithm.AUTO);
            check(ctx, p, r, DType.FLOAT64, layout, true, Algorithm.GEMM_1X1);
            // strided (ResNet's shortcuts): the positions read are copied out
            p.g.stride = new long[] {2, 2};
            p.yd = Reference.outputDims(p.g, p.xd, p.wd);
            check(ctx, p, r, DType.FLOAT32, layout, true, Algorithm.GEMM_1X1);
            p.g.stride = new long[] {1, 1};

            p.g.groups = 6;
            p.g.padBegin = new long[] {1, 1};
            p.g.padEnd = new long[] {1, 1};
            p.wd = new long[] {12, 1, 3, 3};
            p.bias = true;
            p.yd = Reference.outputDims(p.g, p.xd, p.wd);
            check(ctx, p, r, DType.FLOAT32, layout, true, Algorithm.AUTO);
            check(ctx, p, r, DType.FLOAT64, layout, false, Algorithm.DEPTHWISE_DIRECT);
        }
    }

    @Test
    public void descriptorRoundTrips() {
        try (Conv conv = new Conv(3)) {
            assertEquals(3, conv.spatialDims());
            assertArrayEquals(new long[] {1, 1, 1}, conv.getStrides());
            conv.setStrides(1, 2, 3).setDilations(2, 1, 2).setPadding(new long[] {0, 1, 2}, new long[] {2, 1, 0})
                    .setAutoPad(AutoPad.SAME_LOWER).setGroups(3).setActivation(Activation.RELU)
                    .setMode(Mode.TRANSPOSED).setOutputPadding(0, 1, 1)
                    .setAlgorithm(Op.BACKWARD_FILTER, Algorithm.IM2COL_GEMM);
            assertArrayEquals(new long[] {1, 2, 3}, conv.getStrides());
            assertArrayEquals(new long[] {2, 1, 2}, conv.getDilations());
            assertArrayEquals(new long[] {0, 1, 2}, conv.getPaddingBegin());
            assertArrayEquals(new long[] {2, 1, 0}, conv.getPaddingEnd());
            assertEquals(AutoPad.SAME_LOWER, conv.getAutoPad());
            assertEquals(3, conv.getGroups());
            assertEquals(Activation.RELU, conv.getActivation());
            assertEquals(Mode.TRANSPOSED, conv.getMode());
            assertArrayEquals(new long[] {0, 1, 1}, conv.getOutputPadding());
            assertEquals(Algorithm.IM2COL_GEMM, conv.getAlgorithm(Op.BACKWARD_FILTER));
            assertEquals(Algorithm.AUTO, conv.getAlgorithm(Op.FORWARD));
            assertTrue(conv.toString().contains("TRANSPOSED"));
        }
    }

    @Test
    public void costAndWorkspaceSize() {
        try (Conv conv = new Conv(2).setPadding(1, 1);
             Tensor x = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 2, 3, 8, 8);
             Tensor w = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 4, 3, 3, 3);
             Tensor y = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, conv.outputDims(x, w))) {
            Cost cost = conv.cost(Op.FORWARD, DType.FLOAT32, x.dims(), w.dims());
            assertEquals(2.0 * 2 * 4 * 8 * 8 * 3 * 3 * 3, cost.flops(), 0);
            assertTrue(cost.bytes() >= 4.0 * (x.elements() + w.elements() + y.elements()));
            for (Op op : Op.values()) assertTrue(conv.workspaceSize(ctx, op, x, w, y) >= 0);
            conv.setAlgorithm(Op.FORWARD, Algorithm.IM2COL_GEMM);
            assertTrue("im2col needs a column buffer", conv.workspaceSize(ctx, Op.FORWARD, x, w, y) > 0);
            assertEquals(Algorithm.IM2COL_GEMM, conv.chosenAlgorithm(ctx, Op.FORWARD, x, w, y));
        }
    }
}
