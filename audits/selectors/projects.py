"""Reads of projects: the projects a person may see (the API's and the MCP server's lists and lookups; another
account's projects are simply not found)."""

from django.db.models import QuerySet

from accounts.selectors import account_for_user
from audits.models import Project


def project_list_for(user) -> QuerySet[Project]:
    return Project.objects.filter(account=account_for_user(user)).order_by("name", "id")
