PREFIX :       <http://example/>

INSERT DATA {
   :s :p :o {| :source :faraway |}
}
;
DELETE DATA { :s :p :o }
