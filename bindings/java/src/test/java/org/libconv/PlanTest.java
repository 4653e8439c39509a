package org.libconv;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Plans ({@link Conv#plan}): the one-shot calls' results bit for bit, 8 threads executing one
 * plan, prepared weights stale until prepared again, a plan whose context is closed refused,
 * solvers by name, and the verbose trace naming the solver that ran.
 */
public class PlanTest {
    private static Context ctx;

    @BeforeClass
    public static void open() {
        ctx = Context.cpu();
    }

    @AfterClass
    public static void close() {
        ctx.close();
    }

    private static void assertSame(String what, Tensor expected, Tensor actual) {
        assertArrayEquals(what, Problems.read(expected), Problems.read(actual), 0.0);
    }

    /** One problem through the one-shot calls and through plans of the three passes. */
    static void checkAgainstOneShot(Problems.Problem p, Random r, DType dtype, Layout layout) {
        String what = p + " " + dtype + " " + layout;
        boolean ints = dtype == DType.FLOAT32;
        double[] x = Problems.data(r, p.xd, ints);
        double[] w = Problems.data(r, p.wd, ints);
        double[] b = p.bias ? Problems.data(r, new long[] {1, p.yd[1], 1}, ints) : null;
        double[] dy = Problems.data(r, p.yd, ints);
        try (Conv conv = new Conv(p.g.spatial);
             Tensor tx = Problems.tensor(ctx, dtype, layout, p.xd, x, false);
             Tensor tw = Problems.tensor(ctx, dtype, layout, p.wd, w, true);
             Tensor tb = b == null ? null : Problems.tensor(ctx, dtype, layout, p.bd(), b, false);
             Tensor tdy = Problems.tensor(ctx, dtype, layout, p.yd, dy, true);
             Tensor y1 = Problems.nanTensor(ctx, dtype, layout, p.yd, false);
             Tensor y2 = Problems.nanTensor(ctx, dtype, layout, p.yd, true);
             Tensor dx1 = Problems.nanTensor(ctx, dtype, layout, p.xd, false);
             Tensor dx2 = Problems.nanTensor(ctx, dtype, layout, p.xd, false);
             Tensor dw1 = Problems.nanTensor(ctx, dtype, layout, p.wd, false);
             Tensor dw2 = Problems.nanTensor(ctx, dtype, layout, p.wd, false);
             Tensor db1 = b == null ? null : Problems.nanTensor(ctx, dtype, layout, p.bd(), false);
             Tensor db2 = b == null ? null : Problems.nanTensor(ctx, dtype, layout, p.bd(), false)) {
            p.g.apply(conv);
            try (Plan fwd = conv.plan(ctx, Op.FORWARD, dtype, layout, p.xd, p.wd, p.bias);
                 Plan bwd = conv.plan(ctx, Op.BACKWARD_DATA, dtype, layout, p.xd, p.wd, p.bias);
                 Plan bwf = conv.plan(ctx, Op.BACKWARD_FILTER, dtype, layout, p.xd, p.wd, p.bias)) {
                assertFalse("backward-data takes no bias", bwd.hasBias());
                conv.forward(ctx, tx, tw, tb, y1);
                fwd.forward(tx, tw, tb, y2);
                assertSame(what + ": forward", y1, y2);
                Problems.assertClose(what + ": forward", Reference.forward(p.g, x, p.xd, w, p.wd, b, p.yd),
                        Problems.read(y2), dtype);

                conv.backwardData(ctx, tw, tdy, dx1);
                bwd.backwardData(tw, tdy, dx2);
                assertSame(what + ": backward data", dx1, dx2);

                conv.backwardFilter(ctx, tx, tdy, dw1, db1);
                bwf.backwardFilter(tx, tdy, dw2, db2);
                assertSame(what + ": backward filter", dw1, dw2);
                if (db1 != null) assertSame(what + ": bias gradient", db1, db2);
            }
        }
    }

    @Test
    public void plansGiveTheOneShotResults() {
        Random r = new Random(15);
        for (int i = 0; i < 60; ++i)
            checkAgainstOneShot(Problems.random(r, true), r, r.nextBoolean() ? DType.FLOAT32 : DType.FLOAT64,
                    r.nextBoolean() ? Layout.CHANNELS_FIRST : Layout.CHANNELS_LAST);
    }

    @Test
    public void everyListedSolverIsKnownByNameAndForcible() {
        List<String> cpu = LibConv.algorithmNames(Device.CPU);
        assertTrue(cpu.contains("im2col_gemm") && cpu.contains("winograd_4x4_3x3"));
        assertEquals("each name once", cpu.size(), new java.util.HashSet<>(cpu).size());
        boolean privateSolver = false;
        long[] xd = {1, 16, 9, 9}, wd = {16, 16, 1, 1};
        for (String name : cpu) {
            int id = Algorithm.idOf(name);
            assertEquals(name, ConvNative.conv_algo_name(id));
            privateSolver |= Algorithm.find(id) == null;
            // Forcing it by name: it runs, or refuses this problem with UnsupportedException.
            try (Conv conv = new Conv(2).setAlgorithm(Op.FORWARD, name);
                 Plan plan = conv.plan(ctx, Op.FORWARD, DType.FLOAT32, Layout.CHANNELS_FIRST, xd, wd, false)) {
                assertEquals(name, plan.solverName());
            } catch (UnsupportedException e) {
                assertTrue(e.getMessage(), e.getMessage().contains(name));
            }
        }
        assertTrue("solvers without an Algorithm constant are listed too", privateSolver);
        List<String> cuda = LibConv.algorithmNames(Device.CUDA);
        assertTrue(cuda.contains("cudnn_implicit_gemm"));
        for (String name : cuda) assertFalse(name, cpu.contains(name));
    }

    @Test
    public void eightThreadsExecuteOnePlan() throws Exception {
        final int threads = 8;
        Random r = new Random(8);
        long[] xd = {2, 8, 12, 12}, wd = {16, 4, 3, 3}, bd = {1, 16, 1, 1};
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Tensor> tensors = new ArrayList<>();
        try (Conv conv = new Conv(2).setPadding(1, 1).setGroups(2);
             Tensor tw = Problems.tensor(ctx, DType.FLOAT32, Layout.CHANNELS_LAST, wd, Problems.data(r, wd, true), false);
             Tensor tb = Problems.tensor(ctx, DType.FLOAT32, Layout.CHANNELS_LAST, bd, Problems.data(r, bd, true), false);
             Plan plan = conv.plan(ctx, Op.FORWARD, DType.FLOAT32, Layout.CHANNELS_LAST, xd, wd, true)) {
            long[] yd = conv.outputDims(xd, wd);
            List<double[]> expected = new ArrayList<>();
            for (int t = 0; t < threads; ++t) {
                Tensor tx = Problems.tensor(ctx, DType.FLOAT32, Layout.CHANNELS_LAST, xd, Problems.data(r, xd, true), true);
                Tensor ty = Problems.nanTensor(ctx, DType.FLOAT32, Layout.CHANNELS_LAST, yd, false);
                tensors.add(tx);
                tensors.add(ty);
                conv.forward(ctx, tx, tw, tb, ty);
                expected.add(Problems.read(ty));
            }
            CountDownLatch start = new CountDownLatch(threads);
            List<Future<?>> results = new ArrayList<>();
            for (int t = 0; t < threads; ++t) {
                Tensor tx = tensors.get(2 * t), ty = tensors.get(2 * t + 1);
                double[] want = expected.get(t);
                float[] nan = new float[(int) ty.elements()];
                Arrays.fill(nan, Float.NaN);
                results.add(pool.submit(() -> {
                    start.countDown();
                    start.await();
                    for (int i = 0; i < 25; ++i) {
                        ty.copyFrom(nan);
                        plan.forward(tx, tw, tb, ty);
                        assertArrayEquals("plan on 8 threads", want, Problems.read(ty), 0.0);
                    }
                    return null;
                }));
            }
            for (Future<?> f : results) f.get();
        } finally {
            pool.shutdown();
            for (Tensor t : tensors) t.close();
        }
    }

    /**
     * The header's rule on prepared weights: executions use the filter as it was when prepared
     * (if the solver keeps a copy) until it is prepared again. Returns whether it was prepared.
     */
    static boolean checkPreparedWeights(Algorithm algorithm, Op op) {
        Random r = new Random(algorithm.ordinal() * 3 + op.ordinal());
        long[] xd = {2, 8, 12, 12}, wd = {8, 8, 3, 3};
        double[] w1 = Problems.data(r, wd, true), w2 = Problems.data(r, wd, true);
        DType f32 = DType.FLOAT32;
        Layout cf = Layout.CHANNELS_FIRST;
        // Forward reads `a` as x; backward-data as dy (dx has the same dims here).
        try (Conv conv = new Conv(2).setPadding(1, 1).setAlgorithm(op, algorithm);
             Tensor a = Problems.tensor(ctx, f32, cf, xd, Problems.data(r, xd, true), false);
             Tensor w = Problems.tensor(ctx, f32, cf, wd, w1, false);
             Tensor old = Problems.nanTensor(ctx, f32, cf, xd, false);
             Tensor fresh = Problems.nanTensor(ctx, f32, cf, xd, false);
             Tensor out = Problems.nanTensor(ctx, f32, cf, xd, false);
             Plan plan = conv.plan(ctx, op, f32, cf, xd, wd, false)) {
            if (op == Op.FORWARD) {
                conv.forward(ctx, a, w, null, old);
                w.copyFrom(toFloats(w2));
                conv.forward(ctx, a, w, null, fresh);
            } else {
                conv.backwardData(ctx, w, a, old);
                w.copyFrom(toFloats(w2));
                conv.backwardData(ctx, w, a, fresh);
            }
            assertFalse(Arrays.equals(Problems.read(old), Problems.read(fresh)));
            Runnable run = op == Op.FORWARD ? () -> plan.forward(a, w, null, out) : () -> plan.backwardData(w, a, out);

            w.copyFrom(toFloats(w1));
            boolean prepared = plan.prepareWeights(w);
            run.run();
            assertSame("prepared", old, out);
            w.copyFrom(toFloats(w2)); // the weights change; the plan is not told
            run.run();
            assertSame(prepared ? "the prepared copy is used" : "nothing prepared: w is read", prepared ? old : fresh,
                    out);
            assertEquals(prepared, plan.prepareWeights(w));
            run.run();
            assertSame("prepared again", fresh, out);
            w.copyFrom(new float[(int) w.elements()]);
            plan.releaseWeights();
            run.run();
            for (double v : Problems.read(out)) assertEquals("released: w is read again", 0.0, v, 0.0);
            return prepared;
        }
    }

    private static float[] toFloats(double[] logical) {
        float[] f = new float[logical.length];
        for (int i = 0; i < f.length; ++i) f[i] = (float) logical[i];
        return f;
    }

    @Test
    public void preparedWeightsFreshAndStale() {
        for (Op op : new Op[] {Op.FORWARD, Op.BACKWARD_DATA}) {
            // The AVX-512 kernels keep the Winograd-domain filter; the portable ones
            // (CONV_CPU_ISA=baseline) have nothing to prepare.
            assertEquals(ctx.deviceName(), ctx.deviceName().contains("(avx512"),
                    checkPreparedWeights(Algorithm.WINOGRAD_4X4_3X3, op));
            assertFalse("im2col has no filter transform to keep", checkPreparedWeights(Algorithm.IM2COL_GEMM, op));
            checkPreparedWeights(Algorithm.AUTO, op);
        }
    }

    @Test
    public void aPlanWhoseContextIsClosedIsRefused() {
        long[] xd = {1, 4, 8, 8}, wd = {4, 4, 3, 3};
        Context mine = Context.cpu();
        try (Conv conv = new Conv(2).setPadding(1, 1);
             Tensor x = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, xd);
             Tensor w = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, wd);
             Tensor y = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, xd)) {
            Plan plan = conv.plan(mine, Op.FORWARD, DType.FLOAT32, Layout.CHANNELS_FIRST, xd, wd, false);
            plan.forward(x, w, null, y); // tensors of another context of the same device
            mine.close();
            try {
                plan.forward(x, w, null, y);
                fail("a plan whose context is closed ran");
            } catch (InvalidHandleException e) {
                assertEquals(Status.INVALID_HANDLE, e.status());
                assertTrue(e.getMessage(), e.getMessage().contains("context is closed"));
            }
            try {
                plan.prepareWeights(w);
                fail("a plan whose context is closed prepared weights");
            } catch (InvalidHandleException e) {
                assertEquals(Status.INVALID_HANDLE, e.status());
            }
            assertFalse(plan.solverName().isEmpty()); // the plan itself is still there
            plan.close();
            try {
                plan.forward(x, w, null, y);
                fail("a closed plan ran");
            } catch (IllegalStateException e) {
                assertTrue(e.getMessage(), e.getMessage().contains("plan is closed"));
            }
            plan.close(); // twice is fine
        }
    }

    @Test
    public void solversByName() {
        for (Algorithm a : Algorithm.values()) assertEquals(a, Algorithm.fromName(a.libraryName()));
        long[] xd = {1, 8, 16, 16}, wd = {8, 8, 3, 3};
        try (Conv conv = new Conv(2).setPadding(1, 1)) {
            try (Plan plan = conv.plan(ctx, Op.FORWARD, DType.FLOAT32, Layout.CHANNELS_FIRST, xd, wd, false)) {
                // Private solvers (direct_avx512 among them) have no constant: null.
                Algorithm a = plan.algorithm();
                if (a != null) assertEquals(a.libraryName(), plan.solverName());
                if (a != null) assertEquals(a.value(), plan.algorithmId());
                assertTrue(plan.workspaceSize() >= 0);
                assertTrue(plan.toString(), plan.toString().contains(plan.solverName()));
                assertEquals(Op.FORWARD, plan.op());
                assertEquals(DType.FLOAT32, plan.dtype());
                assertEquals(Layout.CHANNELS_FIRST, plan.layout());
                assertEquals(ctx, plan.context());
            }
            conv.setAlgorithm(Op.FORWARD, "im2col_gemm");
            assertEquals(Algorithm.IM2COL_GEMM, conv.getAlgorithm(Op.FORWARD));
            assertEquals("im2col_gemm", conv.getAlgorithmName(Op.FORWARD));
            assertEquals("auto", conv.getAlgorithmName(Op.BACKWARD_DATA));
            try (Plan plan = conv.plan(ctx, Op.FORWARD, DType.FLOAT32, Layout.CHANNELS_FIRST, xd, wd, false)) {
                assertEquals("im2col_gemm", plan.solverName());
                assertEquals(Algorithm.IM2COL_GEMM, plan.algorithm());
                try {
                    plan.backwardData(null, null, null);
                    fail("a forward plan ran backward-data");
                } catch (IllegalStateException e) {
                    assertTrue(e.getMessage(), e.getMessage().contains("FORWARD"));
                }
            }
            try {
                conv.setAlgorithm(Op.FORWARD, "no_such_solver");
                fail("an unknown solver name was accepted");
            } catch (InvalidArgumentException e) {
                assertTrue(e.getMessage(), e.getMessage().contains("no_such_solver"));
                assertTrue("the known names are listed: " + e.getMessage(),
                        e.getMessage().contains("im2col_gemm") && e.getMessage().contains("winograd_4x4_3x3"));
            }
            assertEquals("unchanged", Algorithm.IM2COL_GEMM, conv.getAlgorithm(Op.FORWARD));
            conv.setAlgorithm(Op.FORWARD, "winograd_4x4_3x3");
            try (Plan plan = conv.plan(ctx, Op.FORWARD, DType.FLOAT32, Layout.CHANNELS_FIRST, xd,
                    new long[] {8, 8, 1, 1}, false)) {
                fail("Winograd was planned for a 1x1 kernel: " + plan);
            } catch (UnsupportedException e) {
                assertTrue(e.getMessage(), e.getMessage().length() > 0);
            }
        }
        assertNull("no constant for an id the enum does not have", Algorithm.find(-1));
    }

    @Test
    public void tensorsNotOfThePlansProblemAreRefused() {
        long[] xd = {1, 4, 8, 8}, wd = {4, 4, 3, 3};
        try (Conv conv = new Conv(2).setPadding(1, 1);
             Plan plan = conv.plan(ctx, Op.FORWARD, DType.FLOAT32, Layout.CHANNELS_FIRST, xd, wd, true);
             Tensor x = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, xd);
             Tensor big = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 4, 9, 9);
             Tensor w = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, wd);
             Tensor b = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 4, 1, 1);
             Tensor y = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, xd)) {
            plan.forward(x, w, b, y);
            try {
                plan.forward(big, w, b, y);
                fail("another input size was accepted");
            } catch (ShapeMismatchException expected) {
                // refused
            }
            try {
                plan.forward(x, w, null, y);
                fail("a plan made with a bias ran without one");
            } catch (ConvException expected) {
                // refused
            }
        }
    }

    @Test
    public void theWorkspaceSizeIsExactlyEnough() {
        long[] xd = {2, 4, 9, 9}, wd = {6, 4, 3, 3}, yd = {2, 6, 9, 9};
        Random r = new Random(4);
        try (Conv conv = new Conv(2).setPadding(1, 1).setAlgorithm(Op.FORWARD, "im2col_gemm");
             Plan plan = conv.plan(ctx, Op.FORWARD, DType.FLOAT32, Layout.CHANNELS_FIRST, xd, wd, false);
             Tensor x = Problems.tensor(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, xd, Problems.data(r, xd, true), false);
             Tensor w = Problems.tensor(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, wd, Problems.data(r, wd, true), false);
             Tensor y1 = Problems.nanTensor(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, yd, false);
             Tensor y2 = Problems.nanTensor(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, yd, false)) {
            long bytes = plan.workspaceSize();
            assertTrue("im2col needs a column buffer", bytes > 0);
            try (Workspace small = Workspace.wrap(ctx, java.nio.ByteBuffer.allocateDirect((int) bytes - 1))) {
                plan.forward(x, w, null, y2, small);
                fail("a workspace one byte short was taken");
            } catch (WorkspaceTooSmallException expected) {
                for (double v : Problems.read(y2)) assertTrue("a refused call wrote nothing", Double.isNaN(v));
            }
            try (Workspace exact = Workspace.wrap(ctx, java.nio.ByteBuffer.allocateDirect((int) bytes))) {
                plan.forward(x, w, null, y2, exact);
            }
            conv.forward(ctx, x, w, null, y1);
            assertSame("with a workspace of its size", y1, y2);
        }
    }

    // ------------------------------------------------------------------ trace

    @Test
    public void verboseLevelRoundTrips() {
        try (Context c = Context.cpu()) {
            if (System.getenv("CONV_VERBOSE") == null) assertEquals(0, c.verbose());
            for (int level : new int[] {2, 1, 0}) assertEquals(level, c.setVerbose(level).verbose());
            for (int bad : new int[] {-1, 3}) {
                try {
                    c.setVerbose(bad);
                    fail("verbose level " + bad + " was accepted");
                } catch (InvalidArgumentException e) {
                    assertTrue(e.getMessage(), e.getMessage().contains("0..2"));
                }
            }
            assertEquals("unchanged", 0, c.verbose());
        }
    }

    /**
     * The trace goes to the process's file descriptor 2, out of reach of System.setErr: a child
     * JVM (this class's {@link #main}) runs a plan under CONV_VERBOSE=2 and its stderr is read.
     */
    @Test
    public void theTraceNamesTheSolverThatRan() throws Exception {
        ProcessBuilder pb = new ProcessBuilder(Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), PlanTest.class.getName());
        pb.environment().put("CONV_VERBOSE", "2");
        Process child = pb.start();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Thread drain = new Thread(() -> copy(child.getErrorStream(), err));
        drain.start();
        String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue("the child JVM finished", child.waitFor(60, TimeUnit.SECONDS));
        drain.join();
        String trace = err.toString(StandardCharsets.UTF_8);
        assertEquals("child failed; stdout " + out + " stderr " + trace, 0, child.exitValue());
        String[] lines = out.trim().split("\n");
        assertEquals(out, "level 2", lines[0]);
        String solver = lines[1];
        assertTrue(trace, trace.contains("conv_verbose,exec,cpu,fwd,float32,"));
        assertTrue(trace, trace.contains("solver=" + solver + ","));
        assertTrue("level 2 says why solvers were passed over: " + trace, trace.contains("conv_verbose,skip,"));
        assertTrue("forced by name, and the trace shows it ran: " + trace, trace.contains("solver=im2col_gemm,"));
    }

    private static void copy(InputStream in, ByteArrayOutputStream out) {
        try {
            in.transferTo(out);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The child of {@link #theTraceNamesTheSolverThatRan}: prints the level its context started
     * at and the solver of a forward plan it runs, then runs a pass forced to im2col_gemm.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        long[] xd = {1, 4, 8, 8}, wd = {4, 4, 3, 3};
        try (Context c = Context.cpu();
             Conv conv = new Conv(2).setPadding(1, 1);
             Tensor x = Tensor.create(c, DType.FLOAT32, Layout.CHANNELS_FIRST, xd);
             Tensor w = Tensor.create(c, DType.FLOAT32, Layout.CHANNELS_FIRST, wd);
             Tensor y = Tensor.create(c, DType.FLOAT32, Layout.CHANNELS_FIRST, xd);
             Plan plan = conv.plan(c, Op.FORWARD, DType.FLOAT32, Layout.CHANNELS_FIRST, xd, wd, false)) {
            System.out.println("level " + c.verbose());
            System.out.println(plan.solverName());
            plan.forward(x, w, null, y);
            conv.setAlgorithm(Op.FORWARD, "im2col_gemm").forward(c, x, w, null, y);
        }
    }
}
