"""Views: turn stored records into tables, dashboards and files. A view never runs commands."""
