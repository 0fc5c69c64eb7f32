"""Tools as the reference MCP servers publish them (filesystem, GitHub, Slack, Postgres, fetch,
memory, Puppeteer, git, Google Maps, time): their names, descriptions and parameters, shortened.
With :data:`MCP_CASES`, requests each of which one of them answers; ``bench/tool_search.py``
hides them among hundreds of others."""

from __future__ import annotations

from typing import Any

__all__ = ["MCP_CASES", "mcp_catalog"]


def _tool(tool_name: str, description: str, /, **params: str) -> dict[str, Any]:
    """An OpenAI tool; ``params``: name -> description (``?`` first: optional; ``#``: integer)."""
    props: dict[str, Any] = {}
    required = []
    for key, text in params.items():
        optional = text.startswith("?")
        text = text.lstrip("?")
        kind = "integer" if text.startswith("#") else "string"
        props[key] = {"type": kind, "description": text.lstrip("#")}
        if not optional:
            required.append(key)
    return {
        "type": "function",
        "function": {
            "name": tool_name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


def mcp_catalog() -> list[dict[str, Any]]:
    """34 tools of ten reference MCP servers."""
    path = "Absolute path in the allowed directories."
    owner = "Repository owner (user or organization)."
    repo = "Repository name."
    return [
        _tool("read_file", "Read the complete contents of a file from the file system.", path=path),
        _tool(
            "write_file",
            "Create a new file or overwrite a file with new content.",
            path=path,
            content="Text to write.",
        ),
        _tool("list_directory", "List the files and directories in a directory.", path=path),
        _tool(
            "search_files",
            "Recursively search for files whose names match a pattern.",
            path=path,
            pattern="Glob-style name pattern.",
        ),
        _tool("move_file", "Move or rename a file or directory.", source=path, destination=path),
        _tool("get_file_info", "Size, times and permissions of a file or directory.", path=path),
        _tool(
            "create_issue",
            "Create a new issue in a GitHub repository.",
            owner=owner,
            repo=repo,
            title="Issue title.",
            body="?Issue body, Markdown.",
        ),
        _tool("search_repositories", "Search for GitHub repositories.", query="Search query."),
        _tool(
            "create_pull_request",
            "Open a pull request in a GitHub repository.",
            owner=owner,
            repo=repo,
            title="Pull request title.",
            head="Branch with the changes.",
            base="Branch to merge into.",
        ),
        _tool(
            "list_commits",
            "List the commits of a branch of a GitHub repository.",
            owner=owner,
            repo=repo,
            sha="?Branch name or commit SHA.",
        ),
        _tool(
            "get_file_contents",
            "Contents of a file or directory in a GitHub repository.",
            owner=owner,
            repo=repo,
            path="Path in the repository.",
        ),
        _tool(
            "fork_repository", "Fork a GitHub repository to your account.", owner=owner, repo=repo
        ),
        _tool(
            "slack_post_message",
            "Post a new message to a Slack channel.",
            channel_id="The channel's id.",
            text="The message text.",
        ),
        _tool(
            "slack_list_channels",
            "List the public channels of the Slack workspace.",
            limit="?#How many channels to return.",
        ),
        _tool(
            "slack_get_user_profile", "Detailed profile of a Slack user.", user_id="The user's id."
        ),
        _tool(
            "slack_add_reaction",
            "Add an emoji reaction to a Slack message.",
            channel_id="The channel's id.",
            timestamp="The message's timestamp.",
            reaction="Emoji name, without colons.",
        ),
        _tool("query", "Run a read-only SQL query on the Postgres database.", sql="The query."),
        _tool(
            "fetch",
            "Fetch a URL from the internet and return its content as Markdown.",
            url="The URL.",
            max_length="?#Characters to return at most.",
        ),
        _tool(
            "create_entities",
            "Create entities in the knowledge graph memory.",
            entities="Entity names, comma-separated.",
        ),
        _tool(
            "search_nodes",
            "Search the knowledge graph memory for nodes.",
            query="Words to match names, types and observations.",
        ),
        _tool("puppeteer_navigate", "Open a URL in the browser.", url="The URL."),
        _tool(
            "puppeteer_screenshot",
            "Take a screenshot of the page or of an element.",
            name="Name for the screenshot.",
            selector="?CSS selector of the element.",
        ),
        _tool(
            "git_status",
            "Show the working tree status of a git repository.",
            repo_path="Path to the repository.",
        ),
        _tool(
            "git_commit",
            "Record the staged changes in a git repository.",
            repo_path="Path to the repository.",
            message="Commit message.",
        ),
        _tool(
            "git_log",
            "Show the commit log of a git repository.",
            repo_path="Path to the repository.",
            max_count="?#Commits to show.",
        ),
        _tool(
            "git_create_branch",
            "Create a new branch in a git repository.",
            repo_path="Path to the repository.",
            branch_name="Name of the new branch.",
        ),
        _tool(
            "maps_geocode",
            "Convert an address into geographic coordinates.",
            address="The address.",
        ),
        _tool(
            "maps_directions",
            "Directions between two places by car, on foot or by transit.",
            origin="Starting address.",
            destination="Ending address.",
            mode="?driving, walking, bicycling or transit.",
        ),
        _tool(
            "maps_search_places",
            "Search for places such as restaurants or shops near a location.",
            query="What to look for.",
            location="?Near this address.",
        ),
        _tool(
            "get_current_time",
            "The current time in a time zone.",
            timezone="IANA time zone name, like Europe/Paris.",
        ),
        _tool(
            "convert_time",
            "Convert a time between time zones.",
            source_timezone="IANA name.",
            time="HH:MM, 24-hour.",
            target_timezone="IANA name.",
        ),
        _tool(
            "sentry_get_issue",
            "Details and stack trace of a Sentry issue.",
            issue_id="The Sentry issue id or URL.",
        ),
        _tool(
            "brave_web_search",
            "Search the web with Brave Search.",
            query="Search query.",
            count="?#Results, at most 20.",
        ),
        _tool(
            "todoist_create_task",
            "Create a task in Todoist.",
            content="The task.",
            due_string="?When it is due, in natural language.",
        ),
    ]


MCP_CASES: list[tuple[str, str]] = [
    (
        "Open an issue in octo/widgets titled 'Crash on start' saying the app crashes when it "
        "is launched offline.",
        "create_issue",
    ),
    ("Post 'deploy finished' to the Slack channel C0427.", "slack_post_message"),
    ("Show me what is in the file /srv/app/config.yaml.", "read_file"),
    ("How do I get from Boston to Providence by car?", "maps_directions"),
]
"""A user request and the tool that answers it."""
