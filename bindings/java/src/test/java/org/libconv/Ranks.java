package org.libconv;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Runs one task per rank of a LOCAL communicator group, each on its own thread. */
final class Ranks {
    interface Task {
        void run(Communicator comm) throws Exception;
    }

    private Ranks() {}

    /** Runs the tasks; a failing rank aborts the group so that no other rank waits for it. */
    static void run(int nranks, double timeoutSeconds, Task task) throws Exception {
        Communicator[] comms = Communicator.createLocal(nranks);
        ExecutorService pool = Executors.newFixedThreadPool(nranks);
        try {
            List<Future<?>> results = new ArrayList<>();
            for (Communicator comm : comms) {
                comm.setTimeout(timeoutSeconds);
                results.add(pool.submit(() -> {
                    try {
                        task.run(comm);
                    } catch (Throwable t) {
                        comm.abort();
                        throw t;
                    }
                    return null;
                }));
            }
            for (Future<?> f : results) f.get(2 * (long) timeoutSeconds + 10, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
            for (Communicator comm : comms) comm.close();
        }
    }
}
