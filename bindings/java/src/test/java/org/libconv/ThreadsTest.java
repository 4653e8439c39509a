package org.libconv;

import static org.junit.Assert.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.Test;

/** Several Java threads share one Context (and a Conv, input tensors and a workspace). */
public class ThreadsTest {
    private static final int THREADS = 8;

    @Test
    public void threadsShareOneContext() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try (Context ctx = Context.cpu()) {
            List<Future<Integer>> results = new ArrayList<>();
            for (int t = 0; t < THREADS; ++t) {
                long seed = 1000 + t;
                results.add(pool.submit(() -> {
                    Random r = new Random(seed);
                    int problems = 0;
                    for (int i = 0; i < 25; ++i) {
                        Problems.Problem p = Problems.random(r, true);
                        ForwardBackwardTest.check(ctx, p, r, r.nextBoolean() ? DType.FLOAT32 : DType.FLOAT64,
                                r.nextBoolean() ? Layout.CHANNELS_FIRST : Layout.CHANNELS_LAST, r.nextBoolean(),
                                Algorithm.AUTO);
                        ++problems;
                    }
                    return problems;
                }));
            }
            for (Future<Integer> f : results) assertEquals(25, (int) f.get());
            assertEquals(0, ctx.openChildren());
        } finally {
            pool.shutdown();
        }
    }

    /** One descriptor, one input, one filter and one workspace used by every thread at once. */
    @Test
    public void sharedDescriptorInputsAndWorkspace() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        Random r = new Random(3);
        long[] xd = {2, 8, 24, 24}, wd = {16, 4, 3, 3};
        Reference.Geometry g = new Reference.Geometry(2);
        g.groups = 2;
        g.padBegin = new long[] {1, 1};
        g.padEnd = new long[] {1, 1};
        long[] yd = Reference.outputDims(g, xd, wd);
        double[] x = Problems.data(r, xd, true), w = Problems.data(r, wd, true);
        double[] expected = Reference.forward(g, x, xd, w, wd, null, yd);
        try (Context ctx = Context.cpu();
             Conv conv = new Conv(2);
             Tensor tx = Problems.tensor(ctx, DType.FLOAT32, Layout.CHANNELS_LAST, xd, x, true);
             Tensor tw = Problems.tensor(ctx, DType.FLOAT32, Layout.CHANNELS_LAST, wd, w, false);
             Workspace ws = Workspace.create(ctx)) {
            g.apply(conv);
            List<Future<?>> results = new ArrayList<>();
            for (int t = 0; t < THREADS; ++t) {
                boolean shareWorkspace = t % 2 == 0;
                results.add(pool.submit(() -> {
                    try (Tensor ty = Problems.nanTensor(ctx, DType.FLOAT32, Layout.CHANNELS_LAST, yd, false)) {
                        for (int i = 0; i < 20; ++i) {
                            conv.forward(ctx, tx, tw, null, ty, shareWorkspace ? ws : null);
                            Problems.assertClose("shared forward", expected, Problems.read(ty), DType.FLOAT32);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : results) f.get();
        } finally {
            pool.shutdown();
        }
    }
}
