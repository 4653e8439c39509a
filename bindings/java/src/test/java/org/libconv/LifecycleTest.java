package org.libconv;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.Test;

/**
 * close() frees at once; every method of a closed object throws IllegalStateException (never a
 * crash); closing a context closes what was created with it; creating and closing many objects
 * keeps native memory and threads flat.
 */
public class LifecycleTest {
    /** Methods that work on a closed object. */
    private static final Set<String> ALWAYS_FINE =
            new HashSet<>(Arrays.asList("close", "isClosed", "toString", "context", "isWrapped", "hashCode",
                    "equals", "getClass", "notify", "notifyAll", "wait", "communicator", "dtype"));

    /** An argument for a parameter type that passes every Java-side check. */
    private static Object argument(Class<?> type, Context ctx, Tensor tensor, Workspace ws, boolean nulls) {
        if (type == double.class) return 1.0;
        if (type == int.class) return 0;
        if (type == boolean.class) return true;
        if (type == long.class) return 1L;
        if (type == long[].class) return new long[] {1, 1};
        if (type == float[].class) return new float[8];
        if (type == double[].class) return new double[8];
        if (type == short[].class) return new short[8];
        if (type == byte[].class) return new byte[32];
        if (type == Context.class) return ctx;
        if (type == Tensor.class) return tensor;
        if (type == Workspace.class) return ws;
        if (type == Path.class) return Paths.get("unused");
        if (type == String.class) return nulls ? null : "auto";
        if (type == ByteBuffer.class) return ByteBuffer.allocateDirect(32).order(ByteOrder.nativeOrder());
        if (type == FloatBuffer.class) return Problems.directFloats(8);
        if (type == DoubleBuffer.class) return Problems.directDoubles(8);
        if (type == ShortBuffer.class) return ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder()).asShortBuffer();
        if (nulls) return null;
        if (type.isEnum()) return type.getEnumConstants()[0];
        throw new AssertionError("no argument for " + type);
    }

    /**
     * Calls every public instance method of a closed object, with good arguments and with null
     * ones: each call must throw IllegalStateException.
     */
    private static int callEverything(Object closed, Context ctx, Tensor tensor, Workspace ws) throws Exception {
        return callEverything(closed, ctx, tensor, ws, false) + callEverything(closed, ctx, tensor, ws, true);
    }

    private static int callEverything(Object closed, Context ctx, Tensor tensor, Workspace ws, boolean nulls)
            throws Exception {
        int calls = 0;
        for (Method m : closed.getClass().getMethods()) {
            if (Modifier.isStatic(m.getModifiers()) || ALWAYS_FINE.contains(m.getName())) continue;
            Object[] args = new Object[m.getParameterCount()];
            for (int i = 0; i < args.length; ++i)
                args[i] = argument(m.getParameterTypes()[i], ctx, tensor, ws, nulls);
            try {
                m.invoke(closed, args);
                fail(m + " worked on a closed " + closed.getClass().getSimpleName());
            } catch (InvocationTargetException e) {
                if (!(e.getCause() instanceof IllegalStateException))
                    throw new AssertionError(m + " threw " + e.getCause() + " instead of IllegalStateException",
                            e.getCause());
                assertTrue(e.getCause().getMessage(), e.getCause().getMessage().contains("closed"));
            }
            ++calls;
        }
        return calls;
    }

    @Test
    public void everyMethodOfAClosedObjectThrows() throws Exception {
        try (Context live = Context.cpu();
             Tensor tensor = Tensor.create(live, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 8);
             Workspace ws = Workspace.create(live)) {
            Context ctx = Context.cpu();
            Tensor t = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 8);
            Workspace w = Workspace.create(ctx);
            Conv conv = new Conv(2);
            Plan plan = conv.plan(live, Op.FORWARD, DType.FLOAT32, Layout.CHANNELS_FIRST, new long[] {1, 1, 4, 4},
                    new long[] {1, 1, 1, 1}, false);
            Communicator comm = Communicator.createLocal(1)[0];
            Reducer reducer = Reducer.create(comm, DType.FLOAT32);
            for (AutoCloseable c : new AutoCloseable[] {t, w, conv, plan, ctx, reducer, comm}) {
                c.close();
                c.close(); // twice is fine
            }
            assertTrue(t.isClosed() && w.isClosed() && conv.isClosed() && ctx.isClosed());
            assertTrue(reducer.isClosed() && comm.isClosed() && plan.isClosed());
            assertEquals("Tensor(closed)", t.toString());
            int calls = 0;
            for (Object closed : new Object[] {t, w, conv, plan, ctx, reducer, comm})
                calls += callEverything(closed, live, tensor, ws);
            assertTrue(calls > 200);
            // A closed object as an argument of a live one.
            try (Conv c2 = new Conv(1)) {
                try {
                    c2.forward(live, tensor, t, null, tensor);
                    fail("a closed tensor was used");
                } catch (IllegalStateException expected) {
                    assertTrue(expected.getMessage().contains("tensor is closed"));
                }
                try {
                    c2.forward(live, tensor, tensor, null, tensor, w);
                    fail("a closed workspace was used");
                } catch (IllegalStateException expected) {
                    assertTrue(expected.getMessage().contains("workspace is closed"));
                }
                try {
                    Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 8);
                    fail("a closed context was used");
                } catch (IllegalStateException expected) {
                    assertTrue(expected.getMessage().contains("context is closed"));
                }
            }
        }
    }

    @Test
    public void closingAContextClosesWhatWasCreatedWithIt() {
        Context ctx = Context.cpu();
        Tensor a = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_LAST, 2, 2, 2);
        Tensor b = Tensor.wrap(ctx, Problems.directFloats(8), Layout.CHANNELS_FIRST, 1, 1, 8);
        Workspace ws = Workspace.create(ctx);
        Tensor c = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 1, 1);
        c.close();
        assertEquals(3, ctx.openChildren());
        ctx.close();
        assertTrue(a.isClosed() && b.isClosed() && ws.isClosed());
        assertEquals(0, ctx.openChildren());
        try {
            a.elements();
            fail("used a tensor of a closed context");
        } catch (IllegalStateException expected) {
            // good
        }
    }

    @Test
    public void closeWaitsForACallInFlight() throws Exception {
        try (Context ctx = Context.cpu();
             Conv conv = new Conv(2).setPadding(1, 1);
             Tensor x = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_FIRST, 8, 32, 64, 64);
             Tensor w = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_FIRST, 32, 32, 3, 3)) {
            Tensor y = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_FIRST, 8, 32, 64, 64);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            CountDownLatch started = new CountDownLatch(1);
            Thread worker = new Thread(() -> {
                try {
                    started.countDown();
                    for (int i = 0; i < 50; ++i) conv.forward(ctx, x, w, null, y);
                } catch (IllegalStateException e) {
                    // closed between two calls: the expected outcome
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            worker.start();
            started.await();
            Thread.sleep(20);
            y.close(); // waits for the running forward, then frees; the next one throws
            assertTrue(y.isClosed());
            worker.join();
            if (failure.get() != null) throw new AssertionError(failure.get());
        }
    }

    private static long status(String field) throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"), StandardCharsets.UTF_8))
            if (line.startsWith(field + ":")) return Long.parseLong(line.replaceAll("[^0-9]", ""));
        return -1;
    }

    @Test
    public void manyObjectsCreatedAndClosedDoNotLeak() throws IOException {
        if (!Files.exists(Paths.get("/proc/self/status"))) return; // Linux only
        try (Context ctx = Context.cpu()) {
            FloatBuffer buffer = Problems.directFloats(4 * 32 * 32);
            Runnable round = () -> {
                for (int i = 0; i < 1000; ++i) {
                    // 16 KiB of native memory each: 100k leaked tensors would be 1.6 GB.
                    Tensor t = Tensor.create(ctx, DType.FLOAT32, Layout.CHANNELS_FIRST, 1, 4, 32, 32);
                    t.close();
                    Tensor v = Tensor.wrap(ctx, buffer, Layout.CHANNELS_LAST, 1, 4, 32, 32);
                    v.close();
                    if (i % 5 == 0) {
                        new Conv(2).close();
                        Workspace.create(ctx).close();
                    }
                    if (i % 100 == 0) {
                        Communicator[] group = Communicator.createLocal(2);
                        Reducer.create(group[0], DType.FLOAT32).close();
                        for (Communicator c : group) c.close();
                    }
                }
            };
            for (int i = 0; i < 10; ++i) {  // warm up: JIT, malloc arenas, JVM threads
                round.run();
                Context.cpu().close();
            }
            long threads = status("Threads");
            long rss = status("VmRSS");
            for (int i = 0; i < 100; ++i) round.run(); // 100k tensors of each kind
            // Each context has a thread pool: 50 leaked ones would be 50+ threads.
            for (int i = 0; i < 50; ++i) Context.cpu().close();
            long grown = status("VmRSS") - rss;
            assertTrue("RSS grew by " + grown + " kB", grown < 64 * 1024);
            long moreThreads = status("Threads") - threads;
            assertTrue("threads grew by " + moreThreads, moreThreads <= 4); // the JVM may start a compiler thread
            assertEquals(0, ctx.openChildren());
        }
    }
}
