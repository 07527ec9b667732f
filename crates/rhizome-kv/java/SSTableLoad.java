// Rhizome's bulk path into Apache Cassandra (issue 47): rows read from
// standard input are written as SSTables with Cassandra's own
// CQLSSTableWriter, then streamed to every replica with its bulk loader
// (SSTableLoader, what `sstableloader` runs). CumulusRDF loaded the same
// way. The Rust side (`rhizome-kv`'s
// `backend/cassandra/sstables.rs`) decides the rows, their layout and
// version; this tool knows no layout: the tables' CREATE and INSERT
// statements come as arguments, the rows as raw column values.
//
//   SSTableLoad WORK_DIR HOSTS [CREATE INSERT]...
//
// WORK_DIR: an empty folder; each table's SSTables go to
// WORK_DIR/KEYSPACE/TABLE (the bulk loader takes keyspace and table from
// the path). HOSTS: the cluster's native transport addresses, HOST:PORT
// separated by commas. Then per table its CREATE TABLE statement (the
// keyspace named, the live table's exact schema and options) and its
// INSERT with one bind marker per column.
//
// Standard input: records of one byte, the table's number (0, 1, ...; 255
// ends the input), then each column's value in the INSERT's order as a
// 4-byte big-endian length and that many bytes (Cassandra's own
// serialization of the column's type: a blob as is, an int as 4 bytes, a
// bigint as 8). Exit status 0 once every table was streamed to every
// replica; anything else, with a message on standard error, leaves rows
// that nobody reads (their version is not published).
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import com.datastax.driver.core.SSLOptions;
import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.config.EncryptionOptions;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.io.sstable.CQLSSTableWriter;
import org.apache.cassandra.io.sstable.SSTableLoader;
import org.apache.cassandra.io.sstable.format.SSTableFormat;
import org.apache.cassandra.io.util.File;
import org.apache.cassandra.streaming.StreamResultFuture;
import org.apache.cassandra.streaming.StreamingChannel;
import org.apache.cassandra.tools.BulkLoadConnectionFactory;
import org.apache.cassandra.utils.NativeSSTableLoaderClient;
import org.apache.cassandra.utils.OutputHandler;

public final class SSTableLoad {
    // The nodes' storage port (cassandra.yaml's storage_port), which
    // streaming connects to: the default, as scripts/cassandra's nodes.
    private static final int STORAGE_PORT = Integer.getInteger("rhizome.storage_port", 7000);
    private static final long STARTED = System.nanoTime();
    private static final String SSTABLE_VERSION = "nb";

    public static void main(String[] args) throws Exception {
        if (args.length < 4 || args.length % 2 != 0) {
            System.err.println("usage: SSTableLoad WORK_DIR HOSTS [CREATE INSERT]...");
            System.exit(2);
        }
        try {
            run(args);
        } catch (Throwable e) {
            System.err.println("SSTableLoad: " + e);
            e.printStackTrace(System.err);
            System.exit(1);
        }
        // The loaders' client leaves threads behind.
        System.exit(0);
    }

    // A line on standard error with the seconds since the start (the
    // caller keeps the tool's output in the error it reports on failure).
    private static void say(String what) {
        System.err.printf("SSTableLoad: %.2f s: %s%n", (System.nanoTime() - STARTED) / 1e9, what);
    }

    // The cluster as the loaders see it: its ring and tables, read once
    // (SSTableLoader asks again for each table), streamed to as
    // BulkLoader's client does (a client has no system tables to look
    // peers' preferred addresses up in).
    private static final class Client extends NativeSSTableLoaderClient {
        private boolean ready;

        Client(List<InetSocketAddress> contacts) {
            super(contacts, STORAGE_PORT, (String) null, (String) null, (SSLOptions) null);
        }

        @Override
        public synchronized void init(String keyspace) {
            if (!ready) {
                super.init(keyspace);
                ready = true;
            }
        }

        @Override
        public StreamingChannel.Factory getConnectionFactory() {
            return new BulkLoadConnectionFactory(new EncryptionOptions.ServerEncryptionOptions(), STORAGE_PORT);
        }
    }

    private static List<InetSocketAddress> contacts(String hosts) {
        List<InetSocketAddress> out = new ArrayList<>();
        for (String host : hosts.split(",")) {
            int colon = host.lastIndexOf(':');
            if (colon < 0) {
                throw new IllegalArgumentException("a host without its port: " + host);
            }
            out.add(new InetSocketAddress(host.substring(0, colon), Integer.parseInt(host.substring(colon + 1))));
        }
        return out;
    }

    // How many writers each table's rows are split over, by token range:
    // Cassandra's writer is one thread (and not thread safe), and writing
    // the rows is most of this tool's time (392,447 rows, 6-7 s on one
    // thread), while the nodes are idle until the streams start.
    private static final int WRITERS = Math.max(1, Integer.getInteger("rhizome.sstable_writers", Math.min(4, Runtime.getRuntime().availableProcessors())));
    // Rows handed from the reading thread to a writer's thread at a time.
    private static final int BATCH_ROWS = 1024;
    private static final List<ByteBuffer[]> END = new ArrayList<>();

    // The partition key columns' positions in the INSERT's column list,
    // from the CREATE's PRIMARY KEY clause: "PRIMARY KEY ((a, b), c)",
    // "PRIMARY KEY (a, c)" or "a type PRIMARY KEY".
    static int[] partitionKey(String create, String insert) {
        java.util.regex.Matcher cols = java.util.regex.Pattern.compile("(?is)^\\s*INSERT\\s+INTO\\s+\\S+\\s*\\(([^)]*)\\)").matcher(insert);
        if (!cols.find()) {
            throw new IllegalArgumentException("not an INSERT INTO TABLE (COLUMNS...) statement: " + insert);
        }
        List<String> columns = new ArrayList<>();
        for (String c : cols.group(1).split(",")) {
            columns.add(c.trim().toLowerCase());
        }
        String[] key;
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?is)PRIMARY\\s+KEY\\s*\\(\\s*\\(([^)]*)\\)").matcher(create);
        java.util.regex.Matcher one = java.util.regex.Pattern.compile("(?is)PRIMARY\\s+KEY\\s*\\(\\s*([A-Za-z0-9_]+)").matcher(create);
        java.util.regex.Matcher inline = java.util.regex.Pattern.compile("(?is)[(,]\\s*([A-Za-z0-9_]+)\\s+[A-Za-z0-9_<>, ]+?\\s+PRIMARY\\s+KEY").matcher(create);
        if (m.find()) {
            key = m.group(1).split(",");
        } else if (one.find()) {
            key = new String[] {one.group(1)};
        } else if (inline.find()) {
            key = new String[] {inline.group(1)};
        } else {
            throw new IllegalArgumentException("no PRIMARY KEY in " + create);
        }
        int[] out = new int[key.length];
        for (int i = 0; i < key.length; i++) {
            out[i] = columns.indexOf(key[i].trim().toLowerCase());
            if (out[i] < 0) {
                throw new IllegalArgumentException("the partition key column " + key[i].trim() + " is not in " + insert);
            }
        }
        return out;
    }

    // The partition key's bytes as Cassandra hashes them: the column's
    // value, or for several columns each as a 2-byte length, the bytes
    // and a 0 (CompositeType's layout).
    static ByteBuffer partitionKeyBytes(ByteBuffer[] values, int[] key) {
        if (key.length == 1) {
            return values[key[0]].duplicate();
        }
        int size = 0;
        for (int k : key) {
            size += 3 + values[k].remaining();
        }
        ByteBuffer out = ByteBuffer.allocate(size);
        for (int k : key) {
            ByteBuffer v = values[k].duplicate();
            out.putShort((short) v.remaining()).put(v).put((byte) 0);
        }
        out.flip();
        return out;
    }

    // Which of `writers` token ranges (equal slices of Murmur3's) holds
    // the partition.
    static int range(ByteBuffer partitionKey, int writers) {
        long token = ((Murmur3Partitioner.LongToken) Murmur3Partitioner.instance.getToken(partitionKey)).token;
        return (int) ((((token ^ Long.MIN_VALUE) >>> 32) * writers) >>> 32);
    }

    // One token range of one table: its writer's thread takes the rows
    // the reading thread hands it, writes them into its own folder, then
    // streams its files at once, while the other writers may still write.
    private static final class RangeWriter implements Runnable {
        final BlockingQueue<List<ByteBuffer[]>> queue = new ArrayBlockingQueue<>(8);
        final CQLSSTableWriter writer;
        final Path dir;
        final String name;
        final Client client;
        final CompletableFuture<Void> ring;
        final CompletableFuture<Long> done = new CompletableFuture<>();
        List<ByteBuffer[]> batch = new ArrayList<>(BATCH_ROWS);

        RangeWriter(String name, Path dir, CQLSSTableWriter writer, Client client, CompletableFuture<Void> ring) {
            this.name = name;
            this.dir = dir;
            this.writer = writer;
            this.client = client;
            this.ring = ring;
        }

        void add(ByteBuffer[] row) throws InterruptedException {
            batch.add(row);
            if (batch.size() >= BATCH_ROWS) {
                queue.put(batch);
                batch = new ArrayList<>(BATCH_ROWS);
            }
        }

        void end() throws InterruptedException {
            if (!batch.isEmpty()) {
                queue.put(batch);
            }
            queue.put(END);
        }

        @Override
        public void run() {
            Throwable failed = null;
            long rows = 0;
            // After a failure the queue is still drained, so that the
            // reading thread never waits on it.
            while (true) {
                List<ByteBuffer[]> rowsIn;
                try {
                    rowsIn = queue.take();
                } catch (InterruptedException e) {
                    failed = e;
                    break;
                }
                if (rowsIn == END) {
                    break;
                }
                if (failed != null) {
                    continue;
                }
                try {
                    for (ByteBuffer[] row : rowsIn) {
                        writer.rawAddRow(row);
                    }
                    rows += rowsIn.size();
                } catch (Throwable e) {
                    failed = e;
                }
            }
            try {
                writer.close();
                if (failed == null && rows > 0) {
                    stream();
                }
            } catch (Throwable e) {
                failed = failed == null ? e : failed;
            }
            if (failed != null) {
                done.completeExceptionally(failed);
            } else {
                done.complete(rows);
            }
        }

        private void stream() throws Exception {
            try {
                ring.get();
            } catch (ExecutionException e) {
                throw new IllegalStateException("reading the cluster's ring", e.getCause());
            }
            // Its SSTables to every replica of their ranges (whole files
            // where a node owns all of a file's ranges, as at RF 3 on 3
            // nodes), through the one client: BulkLoader.main would
            // connect again for each table and sleep a second after each.
            SSTableLoader loader = new SSTableLoader(new File(dir.toString()), client, new OutputHandler.SystemOutput(false, true));
            StreamResultFuture stream = loader.stream();
            try {
                stream.get();
            } catch (ExecutionException e) {
                throw new IllegalStateException("streaming " + name + " failed to " + loader.getFailedHosts(), e.getCause());
            }
            if (!loader.getFailedHosts().isEmpty()) {
                throw new IllegalStateException("streaming " + name + " failed to " + loader.getFailedHosts());
            }
        }
    }

    private static void run(String[] args) throws Exception {
        say("started");
        // SSTables in the format of Cassandra 4 ("nb"), which every 5.0
        // node reads whatever its storage_compatibility_mode: a node in
        // the default mode (CASSANDRA_4) takes 5.0's own format ("oa") in
        // by streaming, but then refuses to start ("Detected unreadable
        // sstables"). A client's configuration always says 5.0's format
        // (its compatibility mode is forced to NONE), so the format's
        // latest version is set to "nb" by hand, before any writer asks.
        DatabaseDescriptor.clientInitialization(false);
        SSTableFormat<?, ?> format = DatabaseDescriptor.getSelectedSSTableFormat();
        Field latest = format.getClass().getDeclaredField("latestVersion");
        latest.setAccessible(true);
        latest.set(format, format.getVersion(SSTABLE_VERSION));
        if (!format.getLatestVersion().toString().equals(SSTABLE_VERSION)) {
            throw new IllegalStateException("could not make " + format.name() + " write version " + SSTABLE_VERSION);
        }
        DatabaseDescriptor.setStreamThroughputOutboundBytesPerSec(0);
        DatabaseDescriptor.setEntireSSTableStreamThroughputOutboundMebibytesPerSec(0);
        // Each partition's row index every 4 KiB of rows rather than the
        // BIG format's 64 KiB: a point read in a large partition (an IRI
        // namespace's dictionary bucket, 256 subjects' index rows) then
        // reads and compares about 80 rows, not 1,300. Seed 000's 100k on 3
        // nodes, six alternated pairs: lookups by subject 7.4e-4 -> 4.7e-4 s
        // a result (medians), the nodes' CPU a lookup 34.9 -> 29.9 ms, the
        // files 5% bigger. The nodes' own flushes and compactions keep
        // their setting (cassandra.yaml's column_index_size).
        DatabaseDescriptor.setColumnIndexSizeInKiB(Integer.getInteger("rhizome.column_index_kib", 4));
        Path work = Path.of(args[0]);
        String hosts = args[1];
        int tables = (args.length - 2) / 2;
        // The ring and schema, read while the rows are written (seconds:
        // the driver's first connection).
        Client client = new Client(contacts(hosts));
        String keyspace = null;
        int[] columns = new int[tables];
        int[][] keys = new int[tables][];
        RangeWriter[][] writers = new RangeWriter[tables][WRITERS];
        List<RangeWriter> all = new ArrayList<>();
        CompletableFuture<Void> ring = new CompletableFuture<>();
        for (int t = 0; t < tables; t++) {
            String create = args[2 + 2 * t], insert = args[3 + 2 * t];
            // "CREATE TABLE [IF NOT EXISTS] ks.table (": the folder's name.
            String name = create.replaceFirst("(?is)^\\s*CREATE\\s+TABLE\\s+(IF\\s+NOT\\s+EXISTS\\s+)?([A-Za-z0-9_]+)\\.([A-Za-z0-9_]+).*$", "$2/$3");
            if (name.equals(create)) {
                throw new IllegalArgumentException("not a CREATE TABLE KEYSPACE.TABLE statement: " + create);
            }
            String ks = name.substring(0, name.indexOf('/'));
            if (keyspace != null && !keyspace.equals(ks)) {
                throw new IllegalArgumentException("tables of two keyspaces: " + keyspace + ", " + ks);
            }
            keyspace = ks;
            columns[t] = (int) insert.chars().filter(c -> c == '?').count();
            keys[t] = partitionKey(create, insert);
            for (int r = 0; r < WRITERS; r++) {
                // A folder per writer (each numbers its files from 1);
                // the bulk loader takes keyspace and table from the path.
                Path dir = work.resolve(Integer.toString(r)).resolve(name);
                Files.createDirectories(dir);
                CQLSSTableWriter writer = CQLSSTableWriter.builder()
                    .inDirectory(dir.toString())
                    .forTable(create)
                    .using(insert)
                    .withPartitioner(Murmur3Partitioner.instance)
                    .withBufferSizeInMiB(Math.max(8, 128 / WRITERS))
                    .build();
                writers[t][r] = new RangeWriter(name + " (range " + (r + 1) + " of " + WRITERS + ")", dir, writer, client, ring);
                all.add(writers[t][r]);
            }
        }
        String ringOf = keyspace;
        CompletableFuture.runAsync(() -> client.init(ringOf)).whenComplete((ok, e) -> {
            if (e != null) {
                ring.completeExceptionally(e);
            } else {
                ring.complete(null);
            }
        });
        List<Thread> threads = new ArrayList<>();
        for (RangeWriter w : all) {
            Thread thread = new Thread(w, "writer " + w.name);
            thread.setDaemon(true);
            thread.start();
            threads.add(thread);
        }
        long rows = 0;
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 20))) {
            while (true) {
                int t = in.readUnsignedByte();
                if (t == 255) {
                    break;
                }
                if (t >= tables) {
                    throw new IllegalArgumentException("row " + rows + " names table " + t + " of " + tables);
                }
                ByteBuffer[] values = new ByteBuffer[columns[t]];
                for (int c = 0; c < values.length; c++) {
                    int len = in.readInt();
                    if (len < 0) {
                        throw new IllegalArgumentException("row " + rows + ": a negative length");
                    }
                    byte[] value = new byte[len];
                    in.readFully(value);
                    values[c] = ByteBuffer.wrap(value);
                }
                writers[t][WRITERS == 1 ? 0 : range(partitionKeyBytes(values, keys[t]), WRITERS)].add(values);
                rows++;
            }
        } catch (EOFException e) {
            throw new IllegalArgumentException("the input ended after " + rows + " rows without its end mark", e);
        }
        for (RangeWriter w : all) {
            w.end();
        }
        say(rows + " rows read");
        for (RangeWriter w : all) {
            long written;
            try {
                written = w.done.get();
            } catch (ExecutionException e) {
                throw new IllegalStateException(w.name + ": " + e.getCause(), e.getCause());
            }
            if (written > 0) {
                say(w.name + ": " + written + " rows written and streamed");
            }
        }
    }
}
