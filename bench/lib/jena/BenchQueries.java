// Times SPARQL queries on a TDB2 store in one JVM, for bench/sparql (the
// same protocol as `rhizome bench-queries`): the query file holds one JSON
// line {"id": ..., "query": ...} per query; each runs `warmup` times, then
// `repeat` times measured, parsed, executed and its results written as TSV
// (CONSTRUCT and DESCRIBE: N-Triples) into a line counter; one JSON line per
// query on stdout (rows: solutions, or triples for a graph):
// {"id":"q01","rows":123,"seconds":[...]} or {"id":..,"error":..}.
//
// java -cp 'bench/work/jena/*:bench/work/jena-bench' BenchQueries LOC FILE WARMUP REPEAT [SLOW_SECONDS [TIMEOUT_MS]]
// (a query still running after TIMEOUT_MS, default 120 s, is reported as an error "timeout after N s")
// (a query whose warm-up run takes longer than SLOW_SECONDS is measured once)
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import org.apache.jena.atlas.json.*;
import org.apache.jena.query.*;
import org.apache.jena.riot.Lang;
import org.apache.jena.riot.RDFDataMgr;
import org.apache.jena.system.Txn;
import org.apache.jena.tdb2.TDB2Factory;

public class BenchQueries {
    static final class LineCounter extends OutputStream {
        long lines;
        @Override public void write(int b) { if (b == '\n') lines++; }
        @Override public void write(byte[] b, int off, int len) {
            for (int i = off; i < off + len; i++) if (b[i] == '\n') lines++;
        }
    }

    public static void main(String[] args) throws Exception {
        Dataset ds = TDB2Factory.connectDataset(args[0]);
        List<String> lines = Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8);
        int warmup = Integer.parseInt(args[2]), repeat = Integer.parseInt(args[3]);
        double slow = args.length > 4 ? Double.parseDouble(args[4]) : Double.MAX_VALUE;
        long timeoutMs = args.length > 5 ? Long.parseLong(args[5]) : 120_000;
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        for (String line : lines) {
            if (line.isBlank()) continue;
            JsonObject entry = JSON.parse(line);
            String id = entry.get("id").getAsString().value();
            String text = entry.get("query").getAsString().value();
            List<Double> seconds = new ArrayList<>();
            long rows = 0;
            String error = null;
            int runs = warmup + repeat;
            for (int run = 0; run < runs; run++) {
                long t0 = System.nanoTime();
                LineCounter sink = new LineCounter();
                boolean[] graph = {false};
                try {
                    Txn.executeRead(ds, () -> {
                        Query q = QueryFactory.create(text);
                        try (QueryExecution qe = QueryExecution.dataset(ds).query(q)
                                .timeout(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS).build()) {
                            if (q.isConstructType()) {
                                graph[0] = true;
                                RDFDataMgr.write(sink, qe.execConstruct(), Lang.NTRIPLES);
                            } else if (q.isDescribeType()) {
                                graph[0] = true;
                                RDFDataMgr.write(sink, qe.execDescribe(), Lang.NTRIPLES);
                            } else if (q.isAskType()) {
                                ResultSetFormatter.outputAsTSV(sink, qe.execAsk());
                            } else {
                                ResultSetFormatter.outputAsTSV(sink, qe.execSelect());
                            }
                        }
                    });
                } catch (org.apache.jena.query.QueryCancelledException e) {
                    error = "timeout after " + timeoutMs / 1000 + " s";
                    break;
                } catch (Exception e) {
                    error = e.toString();
                    break;
                }
                rows = graph[0] ? sink.lines : sink.lines - 1; // TSV: a header line
                double el = (System.nanoTime() - t0) / 1e9;
                if (run >= warmup) seconds.add(el);
                else if (el > slow) runs = run + 2; // slow: one measured run after the warm-up
            }
            JsonObject res = new JsonObject();
            res.put("id", id);
            if (error != null) res.put("error", error);
            else {
                res.put("rows", rows);
                JsonArray a = new JsonArray();
                for (double s : seconds) a.add(JsonNumber.value(s));
                res.put("seconds", a);
            }
            out.println(JSON.toStringFlat(res));
        }
    }
}
