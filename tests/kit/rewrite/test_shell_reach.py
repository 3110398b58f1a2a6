"""shell_reach: which words of a command are paths, which are prose, and what code it hands on."""

from arena_kit.rewrite.shell_reach import MAX_DEPTH, reach


def test_echo_printf_comments_and_commit_messages_are_prose():
    found = reach("echo 'held-out rows' >> NOTES.md; printf '%s\\n' grader  # answer key\ngit commit -m 'held-out'")
    assert "held-out rows" not in found.paths + found.texts
    assert "grader" not in found.paths and "held-out" not in found.paths
    assert "NOTES.md" in found.paths


def test_operands_redirect_targets_and_unquoted_globs_are_paths():
    found = reach("cat ~/notes/a.md > out.txt; echo ~/data/*")
    assert {"~/notes/a.md", "out.txt", "~/data/*"} <= set(found.paths)


def test_a_heredoc_written_to_a_file_is_prose_and_one_fed_to_a_shell_is_code():
    assert "held-out" not in " ".join(reach("cat > R.md <<'EOF'\nheld-out rows\nEOF").texts)
    assert "~/x" in reach("bash <<'EOF'\ncat ~/x\nEOF").paths


def test_sql_and_sed_scripts_are_text_not_paths():
    found = reach("sqlite3 db.sqlite 'SELECT 1; -- held-out' && sed -n '/held-out/p' N.md")
    assert "SELECT 1; -- held-out" in found.texts and "/held-out/p" in found.texts
    assert {"db.sqlite", "N.md"} <= set(found.paths)


def test_static_substitutions_variables_and_base64_pipes_are_filled_in():
    assert "/srv/a" in reach("d=/srv; cat $d/a").paths
    assert "/srv/b" in reach("cat $(echo /srv/b)").paths
    assert "/srv/c" in reach("echo Y2F0IC9zcnYvYw== | base64 -d | sh").paths  # "cat /srv/c"


def test_a_search_knows_what_it_looks_for_and_where():
    assert reach("grep -rn held-out .").sought == [("held-out", False)]
    assert reach("grep -r answer_key /").sought == [("answer_key", True)]
    assert reach("find ~ -name grade.py").sought == [("grade.py", True)]


def test_python_prints_are_prose_and_imports_and_paths_are_names():
    found = reach("python3 -c \"import json; print('held-out rows'); open('/srv/x.json')\"")
    assert "held-out rows" not in found.paths + found.texts
    assert {"json", "/srv/x.json"} <= set(found.paths)


def test_wrappers_are_seen_through():
    [invocation] = reach("sudo -u root timeout 5 nice -n 3 cat /srv/x").invocations
    assert (invocation.name, invocation.args) == ("cat", ("/srv/x",))


def test_code_nested_past_the_depth_limit_is_opaque():
    command = "ls"
    for _ in range(MAX_DEPTH + 2):
        command = f"bash -c {command!r}"
    assert reach(command).opaque
    assert not reach("bash -c 'bash -c ls'").opaque


def test_huge_and_hostile_input_is_read_quickly():
    for command in ["echo " + "held-out " * 20000, "(" * 500 + "ls" + ")" * 500, "$(" * 200 + "ls" + ")" * 200]:
        reach(command)  # no exception, no recursion error
