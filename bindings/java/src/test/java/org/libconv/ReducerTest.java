package org.libconv;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.FloatBuffer;
import java.util.Random;
import org.junit.Test;

/** Gradient averaging over a LOCAL group, with gradients written straight into the reducer. */
public class ReducerTest {
    @Test
    public void layoutStepsAndSgd() throws Exception {
        int n = 3;
        int[] counts = {10, 3000, 7};
        Ranks.run(n, 20, comm -> {
            int r = comm.rank();
            FloatBuffer[] weights = new FloatBuffer[counts.length];
            try (Context ctx = Context.cpu(); Reducer red = Reducer.create(comm, DType.FLOAT32)) {
                assertEquals(DType.FLOAT32, red.dtype());
                red.setBucketBytes(64, 4096);
                for (int p = 0; p < counts.length; ++p) {
                    weights[p] = Problems.directFloats(counts[p]);
                    for (int i = 0; i < counts[p]; ++i) weights[p].put(i, r == 0 ? i + p : -1);
                    assertEquals(p, red.addParam(weights[p]));
                }
                red.setup();
                assertEquals(counts.length, red.paramCount());
                int buckets = red.bucketCount();
                assertTrue(buckets >= 2);
                long covered = 0;
                for (int b = 0; b < buckets; ++b) covered += red.bucket(b).params();
                assertEquals(counts.length, covered);
                assertEquals("the last parameter is reduced first", 0, red.paramBucket(counts.length - 1));
                assertTrue(red.paramOffset(0) > red.paramOffset(1));
                assertNotEquals(0, red.bufferAddress());
                assertTrue(red.bufferElements() >= 3017);
                assertEquals(red.gradAddress(0), red.bufferAddress() + 4 * red.paramOffset(0));

                red.broadcastParams(0);
                for (int p = 0; p < counts.length; ++p)
                    for (int i = 0; i < counts[p]; ++i) assertEquals(i + p, weights[p].get(i), 0);

                Tensor[] grads = new Tensor[counts.length];
                for (int p = 0; p < counts.length; ++p)
                    grads[p] = red.gradTensor(ctx, p, Layout.CHANNELS_FIRST, 1, 1, counts[p]);
                for (int step = 0; step < 3; ++step) {
                    for (int p = counts.length - 1; p >= 0; --p) {
                        float[] g = new float[counts[p]];
                        for (int i = 0; i < g.length; ++i) g[i] = (r + 1) * (step + 1);
                        grads[p].copyFrom(g);
                        if (step == 2 && p == 1) red.markUnused(p);
                        else red.markReady(p);
                    }
                    red.finish();
                    for (int p = 0; p < counts.length; ++p) {
                        float[] g = grads[p].toFloatArray();
                        float expected = step == 2 && p == 1 ? 0 : 2f * (step + 1); // mean of 1, 2, 3
                        for (float v : g) assertEquals(expected, v, 1e-6);
                    }
                }
                double[] times = red.stepTimes();
                assertTrue(times[0] >= 0 && times[1] >= 0);

                red.applySgd(0.5, 0, 0); // w -= 0.5 * g
                assertEquals(0 - 0.5f * 6, weights[0].get(0), 1e-6);
                assertEquals(1 - 0, weights[1].get(0), 1e-6); // its gradient was 0

                // A parameter neither ready nor unused: an error on every rank, not a hang.
                red.markReady(0);
                red.markReady(2);
                try {
                    red.finish();
                    fail("parameter 1 was forgotten");
                } catch (InvalidArgumentException expected) {
                    assertEquals("conv_reducer_finish", expected.function());
                }
            }
        });
    }

    /** Backward writes each rank's filter gradient straight into the reducer; finish averages. */
    @Test
    public void backwardFilterIntoTheReducer() throws Exception {
        int n = 2;
        long[] xd = {2, 3, 6, 6}, wd = {4, 3, 3, 3};
        Reference.Geometry g = new Reference.Geometry(2);
        long[] yd = Reference.outputDims(g, xd, wd);
        double[][] xs = new double[n][], dys = new double[n][];
        Random random = new Random(11);
        for (int r = 0; r < n; ++r) {
            xs[r] = Problems.data(random, xd, true);
            dys[r] = Problems.data(random, yd, true);
        }
        double[] expected = new double[(int) Reference.product(wd)];
        for (int r = 0; r < n; ++r) {
            double[] dw = Reference.backwardFilter(g, xs[r], xd, dys[r], yd, wd);
            for (int i = 0; i < dw.length; ++i) expected[i] += dw[i] / n;
        }
        Ranks.run(n, 20, comm -> {
            int r = comm.rank();
            Tensor[] grad = new Tensor[1];
            try (Context ctx = Context.cpu();
                 Conv conv = new Conv(2);
                 Reducer red = Reducer.create(comm, DType.FLOAT64);
                 Tensor x = Problems.tensor(ctx, DType.FLOAT64, Layout.CHANNELS_FIRST, xd, xs[r], false);
                 Tensor dy = Problems.tensor(ctx, DType.FLOAT64, Layout.CHANNELS_FIRST, yd, dys[r], true)) {
                red.addParam(Reference.product(wd));
                red.setup();
                Tensor dw = red.gradTensor(ctx, 0, Layout.CHANNELS_FIRST, wd);
                grad[0] = dw;
                conv.backwardFilter(ctx, x, dy, dw, null);
                red.markReady(0);
                red.finish();
                Problems.assertClose("averaged dw", expected, Problems.read(dw), DType.FLOAT64);
            }
            assertTrue("closed with the reducer", grad[0].isClosed());
        });
    }
}
