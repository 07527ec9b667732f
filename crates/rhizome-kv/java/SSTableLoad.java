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
        Path work = Path.of(args[0]);
        String hosts = args[1];
        int tables = (args.length - 2) / 2;
        List<CQLSSTableWriter> writers = new ArrayList<>();
        List<Path> dirs = new ArrayList<>();
        String keyspace = null;
        int[] columns = new int[tables];
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
            Path dir = work.resolve(name);
            Files.createDirectories(dir);
            dirs.add(dir);
            columns[t] = (int) insert.chars().filter(c -> c == '?').count();
            writers.add(CQLSSTableWriter.builder()
                .inDirectory(dir.toString())
                .forTable(create)
                .using(insert)
                .withPartitioner(Murmur3Partitioner.instance)
                .withBufferSizeInMiB(64)
                .build());
        }
        // The ring and schema, read while the rows are written (seconds:
        // the driver's first connection).
        Client client = new Client(contacts(hosts));
        String ringOf = keyspace;
        CompletableFuture<Void> ring = CompletableFuture.runAsync(() -> client.init(ringOf));
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
                writers.get(t).rawAddRow(values);
                rows++;
            }
        } catch (EOFException e) {
            throw new IllegalArgumentException("the input ended after " + rows + " rows without its end mark", e);
        }
        for (CQLSSTableWriter w : writers) {
            w.close();
        }
        say(rows + " rows written");
        try {
            ring.get();
        } catch (ExecutionException e) {
            throw new IllegalStateException("reading the cluster's ring from " + hosts, e.getCause());
        }
        // Every table at once, through the one client: each loader streams
        // its SSTables to every replica of their ranges (whole files where a
        // node owns all of a file's ranges, as at RF 3 on 3 nodes).
        // BulkLoader.main would connect again for each table, stream them
        // one after the other and sleep a second after each.
        DatabaseDescriptor.setStreamThroughputOutboundBytesPerSec(0);
        DatabaseDescriptor.setEntireSSTableStreamThroughputOutboundMebibytesPerSec(0);
        List<SSTableLoader> loaders = new ArrayList<>();
        List<StreamResultFuture> streams = new ArrayList<>();
        List<Path> streamed = new ArrayList<>();
        for (Path dir : dirs) {
            try (var files = Files.list(dir)) {
                if (files.findAny().isEmpty()) {
                    continue;
                }
            }
            SSTableLoader loader = new SSTableLoader(new File(dir.toString()), client, new OutputHandler.SystemOutput(false, true));
            loaders.add(loader);
            streamed.add(dir.getFileName());
            streams.add(loader.stream());
        }
        for (int i = 0; i < streams.size(); i++) {
            try {
                streams.get(i).get();
            } catch (ExecutionException e) {
                throw new IllegalStateException("streaming failed to " + loaders.get(i).getFailedHosts(), e.getCause());
            }
            if (!loaders.get(i).getFailedHosts().isEmpty()) {
                throw new IllegalStateException("streaming failed to " + loaders.get(i).getFailedHosts());
            }
            say(streamed.get(i) + " streamed");
        }
    }
}
