package org.libconv;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.Test;

/** Collectives of a LOCAL communicator group (ranks = threads of this JVM). */
public class CommunicatorTest {
    @Test
    public void availability() {
        assertTrue(Communicator.isAvailable(CommBackend.LOCAL));
        assertEquals(128, Communicator.UNIQUE_ID_BYTES);
        assertTrue(Communicator.DEFAULT_TIMEOUT > 0);
        if (!Communicator.isAvailable(CommBackend.NCCL)) {
            try {
                Communicator.uniqueId();
                fail("an NCCL id without NCCL");
            } catch (NotAvailableException expected) {
                assertEquals("conv_comm_unique_id", expected.function());
            }
        }
        if (!Communicator.isAvailable(CommBackend.MPI)) {
            try {
                Communicator.createMpiWorld().close();
                fail("MPI without MPI");
            } catch (NotAvailableException expected) {
                // good
            }
        }
    }

    @Test
    public void collectives() throws Exception {
        int n = 4;
        Ranks.run(n, 20, comm -> {
            int r = comm.rank();
            assertEquals(n, comm.size());
            assertEquals(CommBackend.LOCAL, comm.backend());
            assertEquals(Device.CPU, comm.device());
            assertEquals(0, comm.deviceIndex());
            assertEquals(20, comm.timeout(), 0);
            assertEquals(CommState.OK, comm.state());
            assertNull(comm.failure());

            // SUM into another buffer, from a position.
            FloatBuffer send = Problems.directFloats(12), recv = Problems.directFloats(10);
            for (int i = 0; i < 12; ++i) send.put(i, (r + 1) * (i + 1));
            send.position(2);
            comm.allReduce(send, recv, ReduceOp.SUM);
            for (int i = 0; i < 10; ++i) assertEquals(10f * (i + 3), recv.get(i), 0);

            // AVERAGE in place.
            DoubleBuffer values = Problems.directDoubles(5);
            for (int i = 0; i < 5; ++i) values.put(i, r * 4 + i);
            comm.allReduce(values, ReduceOp.AVERAGE);
            for (int i = 0; i < 5; ++i) assertEquals(6 + i, values.get(i), 1e-12);

            // Tensors.
            try (Context ctx = Context.cpu();
                 Tensor t = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_LAST, 1, 2, 3);
                 Tensor sum = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_LAST, 1, 3, 2)) {
                t.copyFrom(new double[] {r, r, r, r, r, 1});
                comm.allReduce(t, sum, ReduceOp.SUM);
                double[] s = sum.toDoubleArray();
                assertEquals(6, s[0], 0);
                assertEquals(4, s[5], 0);
                comm.broadcast(t, 3);
                assertEquals(3, t.toDoubleArray()[0], 0);
                try (Tensor small = Tensor.create(ctx, DType.FLOAT64, Layout.CHANNELS_LAST, 1, 1, 3)) {
                    comm.allReduce(t, small, ReduceOp.SUM);
                    fail("sizes differ");
                } catch (IllegalArgumentException expected) {
                    // checked in Java, before any rank waits
                }
            }

            // Broadcast, bit for bit, of raw bytes.
            ByteBuffer bytes = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
            bytes.putFloat(0, r == 2 ? 7.5f : 0f).putFloat(4, r == 2 ? -1f : 0f);
            comm.broadcast(bytes, DType.FLOAT32, 2);
            assertEquals(7.5f, bytes.getFloat(0), 0);
            assertEquals(-1f, bytes.getFloat(4), 0);

            comm.barrier();
            comm.synchronize();
        });
    }

    @Test
    public void javaSideChecks() throws Exception {
        Ranks.run(1, 5, comm -> {
            try {
                comm.allReduce(FloatBuffer.allocate(4), ReduceOp.SUM);
                fail("a heap buffer");
            } catch (IllegalArgumentException expected) {
                assertTrue(expected.getMessage().contains("heap buffer"));
            }
            try {
                comm.allReduce(Problems.directFloats(4), Problems.directFloats(5), ReduceOp.SUM);
                fail("sizes differ");
            } catch (IllegalArgumentException expected) {
                assertTrue(expected.getMessage().contains("4 elements"));
            }
            try {
                comm.setTimeout(-1);
                fail("a negative timeout");
            } catch (InvalidArgumentException expected) {
                assertEquals("conv_comm_set_timeout", expected.function());
            }
            try {
                comm.setStream(0);
                fail("a stream on LOCAL");
            } catch (UnsupportedException expected) {
                // good
            }
        });
    }

    @Test
    public void aRankThatNeverComesIsATimeoutNotAHang() {
        Communicator[] comms = Communicator.createLocal(2);
        try {
            comms[0].setTimeout(0.3);
            long start = System.nanoTime();
            try {
                comms[0].allReduce(Problems.directFloats(3), ReduceOp.SUM);
                fail("rank 1 never came");
            } catch (BackendErrorException e) {
                assertTrue(e.getMessage(), e.getMessage().contains("timed out"));
            }
            assertTrue((System.nanoTime() - start) / 1e9 < 10);
            assertEquals(CommState.TIMED_OUT, comms[0].state());
            ConvException failure = comms[0].failure();
            assertNotNull(failure);
            assertEquals(Status.BACKEND_ERROR, failure.status());
            try {
                comms[0].barrier();
                fail("a failed communicator stays failed");
            } catch (BackendErrorException expected) {
                // at once
            }
        } finally {
            for (Communicator c : comms) c.close();
        }
    }

    @Test
    public void abortFromAnotherThread() throws Exception {
        Communicator[] comms = Communicator.createLocal(2);
        try {
            comms[0].setTimeout(60);
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            CountDownLatch entered = new CountDownLatch(1);
            Thread waiter = new Thread(() -> {
                try {
                    entered.countDown();
                    comms[0].barrier(); // rank 1 never comes
                } catch (Throwable t) {
                    thrown.set(t);
                }
            });
            waiter.start();
            entered.await();
            Thread.sleep(100);
            comms[0].abort();
            waiter.join(10_000);
            assertTrue("the barrier returned", !waiter.isAlive());
            assertTrue(String.valueOf(thrown.get()), thrown.get() instanceof BackendErrorException);
            assertEquals(CommState.ABORTED, comms[0].state());
            assertEquals("LOCAL aborts the whole group", CommState.ABORTED, comms[1].state());
        } finally {
            for (Communicator c : comms) c.close();
        }
        try {
            comms[0].rank();
            fail("a closed communicator");
        } catch (IllegalStateException expected) {
            // good
        }
    }
}
