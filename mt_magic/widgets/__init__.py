"""Notebook views of materialized tables: live ipywidgets cards, dashboard and queries, static SVG/HTML views, and
readable HTML/text fallbacks for front ends without the widget manager. Views observe the runtime's
immutable statuses and events and call its controls; they never run Spark themselves."""
