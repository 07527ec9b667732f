# What scripts/cassandra (the nodes) and scripts/cassandra-sstables (the
# bulk loader) share (source it, after lib/install.sh).

# Apache Cassandra's class path, from Maven's own record of
# tests/cassandra/pom.xml (dependency:build-classpath, offline, after
# resolving it into the local repository if Maven says it is not there),
# kept in FILE; printed.
cassandra_classpath() {
  local file="$1" pom
  pom="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/tests/cassandra/pom.xml"
  if [ ! -s "$file" ] || [ "$pom" -nt "$file" ]; then
    maven_ensure "$pom"
    "$MVN" -o -q -f "$pom" dependency:build-classpath -Dmdep.outputFile="$file" >/dev/null
    # Maven leaves the file as it was when the class path is the same:
    # touched, so that it is not older than the pom the next time.
    touch "$file"
  fi
  cat "$file"
}

# The JVM options Cassandra's classes need on Java 17 (what
# conf/jvm17-server.options of Cassandra's own distribution gives), in the
# array CASSANDRA_JVM_OPENS.
cassandra_jvm_opens() {
  CASSANDRA_JVM_OPENS=()
  local m
  for m in java.base/jdk.internal.misc java.base/jdk.internal.ref java.base/sun.nio.ch java.management.rmi/com.sun.jmx.remote.internal.rmi \
           java.rmi/sun.rmi.registry java.rmi/sun.rmi.server java.sql/java.sql java.base/java.lang.ref jdk.unsupported/sun.misc; do
    CASSANDRA_JVM_OPENS+=(--add-exports "$m=ALL-UNNAMED")
  done
  for m in java.base/java.lang.module java.base/jdk.internal.loader java.base/jdk.internal.ref java.base/jdk.internal.reflect \
           java.base/jdk.internal.math java.base/jdk.internal.module java.base/jdk.internal.util.jar jdk.management/com.sun.management.internal \
           java.base/sun.nio.ch java.base/java.io java.base/java.nio java.base/java.util.concurrent java.base/java.util \
           java.base/java.util.concurrent.atomic java.base/java.lang java.base/java.math java.base/java.lang.reflect java.base/java.net; do
    CASSANDRA_JVM_OPENS+=(--add-opens "$m=ALL-UNNAMED")
  done
}
