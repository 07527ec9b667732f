-- bench/graph, PostgreSQL 15 side: seed 003's graph workloads as functions
-- (run server-side, so client round trips are not counted for PostgreSQL).

-- Every profile within two outbound links of s, s excluded.
CREATE OR REPLACE FUNCTION two_hop(s int) RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT count(*) FROM (
    SELECT dst FROM edges WHERE src = s
    UNION
    SELECT e2.dst FROM edges e1 JOIN edges e2 ON e2.src = e1.dst WHERE e1.src = s
  ) t WHERE dst <> s
$$;

-- The length of a shortest outbound path from a to b (NULL: none), by
-- bidirectional breadth-first search expanding the smaller frontier.
CREATE OR REPLACE FUNCTION shortest_len(a int, b int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  df int := 0; db int := 0; nf bigint := 1; nb bigint := 1; hit int;
BEGIN
  IF a = b THEN RETURN 0; END IF;
  CREATE TEMP TABLE IF NOT EXISTS fv(id int PRIMARY KEY, d int);
  CREATE TEMP TABLE IF NOT EXISTS bv(id int PRIMARY KEY, d int);
  TRUNCATE fv; TRUNCATE bv;
  INSERT INTO fv VALUES (a, 0);
  INSERT INTO bv VALUES (b, 0);
  LOOP
    IF nf = 0 OR nb = 0 THEN RETURN NULL; END IF;
    IF nf <= nb THEN
      INSERT INTO fv SELECT DISTINCT e.dst, df + 1 FROM fv f JOIN edges e ON e.src = f.id WHERE f.d = df ON CONFLICT DO NOTHING;
      GET DIAGNOSTICS nf = ROW_COUNT;
      df := df + 1;
      SELECT min(x.d) INTO hit FROM fv f JOIN bv x ON x.id = f.id WHERE f.d = df;
      IF hit IS NOT NULL THEN RETURN df + hit; END IF;
    ELSE
      INSERT INTO bv SELECT DISTINCT e.src, db + 1 FROM bv x JOIN edges e ON e.dst = x.id WHERE x.d = db ON CONFLICT DO NOTHING;
      GET DIAGNOSTICS nb = ROW_COUNT;
      db := db + 1;
      SELECT min(f.d) INTO hit FROM bv x JOIN fv f ON f.id = x.id WHERE x.d = db;
      IF hit IS NOT NULL THEN RETURN db + hit; END IF;
    END IF;
  END LOOP;
END $$;
