// bench/graph, Neo4j 5.26 Community embedded (Java 17): loads the Pokec-shaped
// data of gen-pokec and runs seed 003's five workloads in process, printing
// one JSON line. Load: transactional batches (not neo4j-admin import), a
// uniqueness constraint on :Profile(id) first.
//   java -cp 'jars/*:.' PokecBench DATADIR STOREDIR OPS [imported]
// With `imported`, the store was filled by `neo4j-admin database import
// full` (bench/graph/run): only the constraint is created here, and its
// time is printed as load_s.
import java.io.BufferedReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.RelationshipType;
import org.neo4j.graphdb.Result;
import org.neo4j.graphdb.Transaction;

public class PokecBench {
    static final Label PROFILE = Label.label("Profile");
    static final RelationshipType KNOWS = RelationshipType.withName("KNOWS");

    // The profiles are flat JSON objects of strings and integers (gen-pokec).
    static void setProperties(Node n, String json) {
        int i = json.indexOf('{') + 1;
        while (true) {
            int k0 = json.indexOf('"', i);
            if (k0 < 0) return;
            int k1 = json.indexOf('"', k0 + 1);
            String key = json.substring(k0 + 1, k1);
            int c = json.indexOf(':', k1) + 1;
            while (json.charAt(c) == ' ') c++;
            if (json.charAt(c) == '"') {
                StringBuilder sb = new StringBuilder();
                int j = c + 1;
                for (; json.charAt(j) != '"'; j++) {
                    char ch = json.charAt(j);
                    if (ch == '\\') { j++; ch = json.charAt(j); }
                    sb.append(ch);
                }
                n.setProperty(key, sb.toString());
                i = j + 1;
            } else {
                int j = c;
                while (j < json.length() && (Character.isDigit(json.charAt(j)) || json.charAt(j) == '-')) j++;
                n.setProperty(key, Long.parseLong(json.substring(c, j)));
                i = j;
            }
        }
    }

    static long du(Path p) throws Exception {
        try (Stream<Path> s = Files.walk(p)) {
            return s.filter(Files::isRegularFile).mapToLong(f -> f.toFile().length()).sum();
        }
    }

    interface Op { void run(GraphDatabaseService db, long i) throws Exception; }

    static double parallel(GraphDatabaseService db, int threads, long ops, Op op) throws Exception {
        AtomicLong next = new AtomicLong();
        List<Thread> ts = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(() -> {
                try {
                    for (long i; (i = next.getAndIncrement()) < ops; ) op.run(db, i);
                } catch (Exception e) { throw new RuntimeException(e); }
            });
            th.start();
            ts.add(th);
        }
        for (Thread th : ts) th.join();
        return ops / ((System.nanoTime() - t0) / 1e9);
    }

    public static void main(String[] args) throws Exception {
        Path data = Path.of(args[0]);
        Path store = Path.of(args[1]);
        long ops = Long.parseLong(args[2]);
        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(store)
                .setConfig(GraphDatabaseSettings.pagecache_memory, 4L << 30)
                .build();
        GraphDatabaseService db = dbms.database("neo4j");
        StringBuilder out = new StringBuilder("{");
        long t0 = System.nanoTime();
        try (Transaction tx = db.beginTx()) {
            tx.execute("CREATE CONSTRAINT profile_id IF NOT EXISTS FOR (p:Profile) REQUIRE p.id IS UNIQUE");
            tx.commit();
        }
        try (Transaction tx = db.beginTx()) {
            tx.execute("CALL db.awaitIndexes(86400)");
        }
        boolean imported = args.length > 3 && args[3].equals("imported");
        List<String> lines = imported ? List.of() : Files.readAllLines(data.resolve("profiles.tsv"));
        int n = imported ? (int) Files.lines(data.resolve("profiles.tsv")).count() : lines.size();
        long[] ids = new long[n];
        for (int start = 0; !imported && start < n; start += 50_000) {
            try (Transaction tx = db.beginTx()) {
                for (int i = start; i < Math.min(n, start + 50_000); i++) {
                    String line = lines.get(i);
                    int tab = line.indexOf('\t');
                    int id = Integer.parseInt(line.substring(0, tab));
                    Node node = tx.createNode(PROFILE);
                    node.setProperty("id", (long) id);
                    setProperties(node, line.substring(tab + 1));
                    ids[id] = node.getId();
                }
                tx.commit();
            }
        }
        lines = null;
        if (!imported) try (BufferedReader r = Files.newBufferedReader(data.resolve("edges.tsv"))) {
            String line;
            int batch = 0;
            Transaction tx = db.beginTx();
            while ((line = r.readLine()) != null) {
                int tab = line.indexOf('\t');
                Node a = tx.getNodeById(ids[Integer.parseInt(line.substring(0, tab))]);
                Node b = tx.getNodeById(ids[Integer.parseInt(line.substring(tab + 1))]);
                a.createRelationshipTo(b, KNOWS);
                if (++batch == 100_000) {
                    tx.commit();
                    tx.close();
                    tx = db.beginTx();
                    batch = 0;
                }
            }
            tx.commit();
            tx.close();
        }
        out.append("\"load_s\":").append((System.nanoTime() - t0) / 1e9);
        out.append(",\"store_bytes\":").append(du(store.resolve("data")));
        final int profiles = n;
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(7);
        long[] readIds = new long[(int) ops];
        for (int i = 0; i < ops; i++) readIds[i] = rnd.nextInt(profiles);
        Op read = (g, i) -> {
            try (Transaction tx = g.beginTx()) {
                Node p = tx.findNode(PROFILE, "id", readIds[(int) i]);
                Map<String, Object> props = p.getAllProperties();
                if (props.isEmpty()) throw new IllegalStateException("empty profile");
            }
        };
        parallel(db, 25, ops, read);
        out.append(",\"reads_per_s\":").append(parallel(db, 25, ops, read));
        String profile = Files.readString(data.resolve("writes.txt")).trim();
        out.append(",\"writes_per_s\":").append(parallel(db, 25, ops, (g, i) -> {
            try (Transaction tx = g.beginTx()) {
                Node p = tx.createNode(PROFILE);
                p.setProperty("id", (long) profiles + i);
                setProperties(p, profile);
                tx.commit();
            }
        }));
        String agg = "MATCH (p:Profile) WHERE p.id < $n RETURN p.AGE AS age, count(*) AS c";
        double best = 1e9;
        for (int k = 0; k < 4; k++) {
            long t = System.nanoTime();
            try (Transaction tx = db.beginTx(); Result r = tx.execute(agg, Map.of("n", (long) profiles))) {
                while (r.hasNext()) r.next();
            }
            if (k > 0) best = Math.min(best, (System.nanoTime() - t) / 1e9);
        }
        out.append(",\"aggregation_s\":").append(best);
        List<String> starts = Files.readAllLines(data.resolve("starts.txt"));
        String hop = "MATCH (p:Profile {id: $id})-[:KNOWS*1..2]->(q) WHERE q <> p RETURN count(DISTINCT q) AS c";
        long reached = 0;
        long t = System.nanoTime();
        for (String s : starts) {
            try (Transaction tx = db.beginTx(); Result r = tx.execute(hop, Map.of("id", Long.parseLong(s.trim())))) {
                reached += (Long) r.next().get("c");
            }
        }
        out.append(",\"two_hop_s\":").append((System.nanoTime() - t) / 1e9).append(",\"two_hop_nodes\":").append(reached);
        List<String> pairs = Files.readAllLines(data.resolve("pairs.txt"));
        String sp = "MATCH (a:Profile {id: $a}), (b:Profile {id: $b}) MATCH p = shortestPath((a)-[:KNOWS*]->(b)) RETURN length(p) AS l";
        // Warm-up (the seed's update 3: JIT before measuring).
        for (int k = 0; k < 3; k++) {
            for (String pr : pairs) {
                String[] ab = pr.split("\t");
                try (Transaction tx = db.beginTx(); Result r = tx.execute(sp, Map.of("a", Long.parseLong(ab[1]), "b", Long.parseLong(ab[0])))) {
                    while (r.hasNext()) r.next();
                }
            }
        }
        StringBuilder lengths = new StringBuilder("[");
        t = System.nanoTime();
        for (String pr : pairs) {
            String[] ab = pr.split("\t");
            try (Transaction tx = db.beginTx(); Result r = tx.execute(sp, Map.of("a", Long.parseLong(ab[0]), "b", Long.parseLong(ab[1])))) {
                long l = r.hasNext() ? (Long) r.next().get("l") : -1;
                if (lengths.length() > 1) lengths.append(',');
                lengths.append(l);
            }
        }
        out.append(",\"paths_s\":").append((System.nanoTime() - t) / 1e9).append(",\"path_lengths\":").append(lengths).append("]}");
        dbms.shutdown();
        System.out.println(out);
    }
}
