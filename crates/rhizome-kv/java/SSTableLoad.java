// Rhizome's bulk path into Apache Cassandra (issue 47): rows read from
// standard input are written as SSTables with Cassandra's own
// CQLSSTableWriter, then streamed to every replica with its bulk loader
// (org.apache.cassandra.tools.BulkLoader, what `sstableloader` runs).
// CumulusRDF loaded the same way. The Rust side (`rhizome-kv`'s
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
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.io.sstable.CQLSSTableWriter;
import org.apache.cassandra.tools.BulkLoader;

public final class SSTableLoad {
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
        // The bulk loader's client leaves threads behind.
        System.exit(0);
    }

    private static void run(String[] args) throws Exception {
        Path work = Path.of(args[0]);
        String hosts = args[1];
        int tables = (args.length - 2) / 2;
        List<CQLSSTableWriter> writers = new ArrayList<>();
        List<Path> dirs = new ArrayList<>();
        int[] columns = new int[tables];
        for (int t = 0; t < tables; t++) {
            String create = args[2 + 2 * t], insert = args[3 + 2 * t];
            // "CREATE TABLE [IF NOT EXISTS] ks.table (": the folder's name.
            String name = create.replaceFirst("(?is)^\\s*CREATE\\s+TABLE\\s+(IF\\s+NOT\\s+EXISTS\\s+)?([A-Za-z0-9_]+)\\.([A-Za-z0-9_]+).*$", "$2/$3");
            if (name.equals(create)) {
                throw new IllegalArgumentException("not a CREATE TABLE KEYSPACE.TABLE statement: " + create);
            }
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
        for (Path dir : dirs) {
            if (Files.list(dir).findAny().isEmpty()) {
                continue;
            }
            // Streams each SSTable to every replica of its ranges; throws
            // when a stream failed.
            BulkLoader.main(new String[] {"--nodes", hosts, "--no-progress", dir.toString()});
        }
    }
}
